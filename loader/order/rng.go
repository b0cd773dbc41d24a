package order

import (
	"math/bits"
	"math/rand/v2"
)

// Random streams: each shuffle draws from its own generator, keyed by
// (seed, epoch, stream, index), so that any part of an order can be
// computed without the others.
const (
	streamFull   = 1 // ModeFull permutation; index 0
	streamBlocks = 2 // ModeBlock block order; index 0
	streamWindow = 3 // ModeBlock rows of one window; index: its first padded position
	streamDraws  = 4 // mixture draws; index: the stage
	streamPart   = 5 // mixture dataset seeds; index: the dataset
)

// splitmix is SplitMix64's output function applied to x plus its
// increment.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// key hashes (seed, epoch, stream, index) to 64 bits.
func key(seed, epoch, stream, index uint64) uint64 {
	h := splitmix(seed)
	h = splitmix(h ^ epoch)
	h = splitmix(h ^ stream)
	return splitmix(h ^ index)
}

// rng is the generator of one stream: math/rand/v2's PCG (128-bit LCG,
// DXSM output) seeded with (h, splitmix(h)).
type rng struct{ pcg rand.PCG }

func newRNG(seed, epoch, stream, index uint64) rng {
	h := key(seed, epoch, stream, index)
	var r rng
	r.pcg.Seed(h, splitmix(h))
	return r
}

// below returns a uniform integer in [0, n), n > 0, by Lemire's multiply
// and reject: x is the next output; the result is the high word of x*n
// unless the low word is below (2^64 - n) mod n, in which case x is drawn
// again.
func (r *rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.pcg.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.pcg.Uint64(), n)
		}
	}
	return hi
}

// shuffle permutes a by Fisher-Yates: for i from len(a)-1 down to 1, swap
// a[i] with a[below(i+1)].
func shuffle[T any](r *rng, a []T) {
	for i := len(a) - 1; i > 0; i-- {
		j := r.below(uint64(i + 1))
		a[i], a[j] = a[j], a[i]
	}
}
