package testseed

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSeedFromEnvironment(t *testing.T) {
	t.Setenv(Env, "1234")
	require.Equal(t, uint64(1234), Seed(t))
	require.Equal(t, uint64(1234), Seed(t), "the same seed every time")
}

func TestSeedRandomByDefault(t *testing.T) {
	t.Setenv(Env, "")
	a, b := Seed(t), Seed(t)
	require.NotEqual(t, a, b, "two draws of 64 random bits")
}

func TestRandReplays(t *testing.T) {
	t.Setenv(Env, "1234")
	a, b := Rand(t, 7), Rand(t, 7)
	require.Equal(t, a.Uint64(), b.Uint64(), "one seed and stream, one sequence")
	require.Equal(t, rand.New(rand.NewPCG(1234, 7)).Uint64(), Rand(t, 7).Uint64())
	require.NotEqual(t, Rand(t, 7).Uint64(), Rand(t, 8).Uint64(), "another stream")
}

func TestBytesReplay(t *testing.T) {
	a := Bytes(5, 100)
	require.Len(t, a, 100)
	require.Equal(t, a, Bytes(5, 100), "one seed, one payload")
	require.Equal(t, a[:10], Bytes(5, 10), "a shorter payload is a prefix")
	require.NotEqual(t, a, Bytes(6, 100), "another seed")
}
