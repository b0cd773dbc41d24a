// Package testseed gives property tests one replayable seed: random by
// default, fixed by the environment variable LOCH_TEST_SEED, and logged
// either way so that a failure can be replayed:
//
//	LOCH_TEST_SEED=1234 go test -run TestRoundTripProperty .
package testseed

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Env names the environment variable that fixes the seed.
const Env = "LOCH_TEST_SEED"

// Seed returns the seed of a property test: LOCH_TEST_SEED's value when it
// is set (a malformed value fails the test), else a random one. It logs the
// seed with the command line that replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if v := os.Getenv(Env); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want an unsigned decimal integer", Env, v)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, Env, seed)
	return seed
}

// Rand returns a generator of stream stream seeded by Seed(t), for a test
// that needs the seed only to make it.
func Rand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	return rand.New(rand.NewPCG(Seed(t), stream))
}

// Bytes returns n reproducible pseudo-random bytes for seed (ChaCha8): the
// same bytes for the same seed on every run and machine, for test
// payloads.
func Bytes(seed uint64, n int) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}
