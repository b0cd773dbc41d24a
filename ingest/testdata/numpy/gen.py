"""Writes the .npy/.npz fixtures of ingest's numpy tests (numpy 2.x).

Run from this directory: python gen.py. Every array is a function of its
row index, so the Go test can compute the expected values (see
numpy_test.go, TestNumpyFixtures).
"""
import numpy as np

n = 5
i = np.arange(n)

arrays = {
    "b": (i % 2 == 0),                                   # |b1
    "i1": (i - 2).astype(np.int8),                       # |i1
    "u2": (i * 1000).astype(np.uint16),                  # <u2
    "i4be": (i * -70000).astype(">i4"),                  # >i4, big-endian
    "i8": (i * 10**12).astype(np.int64),                 # <i8
    "f2": (i / 4).astype(np.float16),                    # <f2
    "f4": np.stack([i, i * 0.5, -i]).T.astype(np.float32).copy(),  # <f4, shape (n, 3)
    "f8fortran": np.asfortranarray(                      # <f8, (n, 2, 3), Fortran order
        np.arange(n * 6, dtype=np.float64).reshape(n, 2, 3)),
    "u1img": np.arange(n * 2 * 2 * 3, dtype=np.uint8).reshape(n, 2, 2, 3),
    "names": np.array(["row%d" % k + "é" * k for k in range(n)]),  # <U
    "raw": np.array([b"x" * k for k in range(n)]),       # |S4
}

for name, a in arrays.items():
    np.save(name + ".npy", a)

np.savez("plain.npz", b=arrays["b"], i8=arrays["i8"], f4=arrays["f4"])
np.savez_compressed("compressed.npz", f2=arrays["f2"], u1img=arrays["u1img"], names=arrays["names"])
np.save("short.npy", np.arange(3, dtype=np.int64))
np.save("scalar.npy", np.float32(1.5))
np.save("complex.npy", np.zeros(3, dtype=np.complex64))
np.save("structured.npy", np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]))
