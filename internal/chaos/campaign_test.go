//go:build chaos

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/chaos"
)

// TestMain lets the test binary act as the campaign's loader reader: with
// chaos.DigestEnv set it prints the digest of that dataset and exits.
func TestMain(m *testing.M) {
	if url := os.Getenv(chaos.DigestEnv); url != "" {
		rows, sum, err := chaos.Digest(context.Background(), url)
		if err != nil {
			fmt.Fprintf(os.Stderr, "loader: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("rows %d, digest %s\n", rows, sum)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestCampaign runs the campaign the environment describes (see
// chaos.ConfigFromEnv) and fails if any scenario ended in a panic, a hang,
// a wrong read or a lost commit.
func TestCampaign(t *testing.T) {
	cfg, err := chaos.ConfigFromEnv()
	require.NoError(t, err)
	cfg.Repo, err = filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	exe, err := os.Executable()
	require.NoError(t, err)
	cfg.Digest = []string{exe}
	cfg.Log = os.Stdout
	table := chaos.Run(t, cfg)
	if n := table.Failed(); n > 0 {
		t.Errorf("%d scenarios ended in a panic, a hang, a wrong read or a lost commit: see the table and the list above", n)
	}
}
