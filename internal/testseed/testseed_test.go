package testseed

import (
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
