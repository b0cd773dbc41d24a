"""Trains a small image classifier in JAX on a loch dataset streamed with
ds.jax(), printing samples/s and the share of time the training loop waited
for data after each epoch.

    python examples/train_jax.py .demo/pets --epochs 2

Plain JAX (no Flax or Optax): three strided convolutions, a linear head,
SGD with momentum, the whole step under jax.jit. The batch is placed on a
sharding over the local devices (its leading axis split across them).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import loch

Params = dict[str, Any]


def init(key: jax.Array, classes: int) -> Params:
    widths = [3, 32, 64, 128]
    keys = jax.random.split(key, len(widths))
    params: Params = {}
    for i in range(3):
        fan_in = 9 * widths[i]
        params[f"conv{i}"] = jax.random.normal(keys[i], (3, 3, widths[i], widths[i + 1])) * jnp.sqrt(2 / fan_in)
        params[f"bias{i}"] = jnp.zeros(widths[i + 1])
    params["head"] = jax.random.normal(keys[-1], (128, classes)) * jnp.sqrt(1 / 128)
    params["head_bias"] = jnp.zeros(classes)
    return params


def forward(params: Params, images: jax.Array) -> jax.Array:
    x = images.astype(jnp.float32) / 255.0  # NHWC uint8 -> float
    for i in range(3):
        x = jax.lax.conv_general_dilated(x, params[f"conv{i}"], (2, 2), "SAME",
                                         dimension_numbers=("NHWC", "HWIO", "NHWC"))
        x = jax.nn.relu(x + params[f"bias{i}"])
        x = (x - x.mean(axis=(0, 1, 2))) / (x.std(axis=(0, 1, 2)) + 1e-5)  # batch norm without state
    return x.mean(axis=(1, 2)) @ params["head"] + params["head_bias"]


def loss_fn(params: Params, images: jax.Array, labels: jax.Array) -> tuple[jax.Array, jax.Array]:
    logits = forward(params, images)
    loss = -jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1).mean()
    return loss, (logits.argmax(1) == labels).sum()


@jax.jit
def step(params: Params, velocity: Params, images: jax.Array, labels: jax.Array, lr: float) -> Any:
    (loss, correct), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, images, labels)
    velocity = jax.tree.map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity, loss, correct


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", help="dataset URL or path")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--image")
    p.add_argument("--label")
    args = p.parse_args()

    ds = loch.open(args.dataset)
    image = args.image or next(n for n, c in ds.schema.items() if c.kind == "image")
    label = args.label or next(n for n, c in ds.schema.items() if c.kind == "class_label")
    names = ds.schema[label].class_names
    classes = len(names) if names else int(np.max(ds[label][:])) + 1
    mesh = jax.sharding.Mesh(np.array(jax.local_devices()), ("batch",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("batch"))
    loader = ds.jax(batch_size=args.batch_size, shuffle=True, seed=0, columns=[image, label], drop_last=True,
                    sharding=sharding)  # fmt: skip
    params = init(jax.random.key(0), classes)
    velocity = jax.tree.map(jnp.zeros_like, params)
    print(f"{ds.url}: {len(ds)} rows, {classes} classes, {len(loader)} batches of {args.batch_size} per epoch, "
          f"devices {jax.local_devices()}")  # fmt: skip
    for epoch in range(args.epochs):
        loader.set_epoch(epoch)
        seen = steps = 0
        losses, corrects = [], []
        t0 = time.perf_counter()
        for batch in loader:
            params, velocity, loss, correct = step(params, velocity, batch[image], batch[label], args.lr)
            # Wait for the step, so that the loader's wait share counts the time the device idled for
            # data rather than the time an asynchronously dispatched step ran.
            loss.block_until_ready()
            losses.append(loss)
            corrects.append(correct)
            seen += batch[label].shape[0]
            steps += 1
            if args.max_steps and steps >= args.max_steps:
                break
        jax.block_until_ready(params)
        elapsed = time.perf_counter() - t0
        wait = loader.stats().get("wait_share", 0.0)
        print(f"epoch {epoch}: {steps} steps, {seen / elapsed:.0f} samples/s, waited for data {wait:.1%}, "
              f"loss {float(jnp.mean(jnp.stack(losses))):.3f}, accuracy {int(sum(corrects)) / max(seen, 1):.1%}")


if __name__ == "__main__":
    main()
