package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	loch "github.com/lochdata/loch"
	"github.com/lochdata/loch/storage"
)

func TestStorageSettings(t *testing.T) {
	s, err := storageSettings(map[string]string{"aws_endpoint": "http://127.0.0.1:9000", "region": "eu-west-1",
		"access_key_id": "id", "aws_secret_access_key": "very-secret", "session_token": "tok"})
	require.NoError(t, err)
	require.Equal(t, storage.Settings{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKeyID: "id",
		SecretAccessKey: "very-secret", SessionToken: "tok"}, s)

	_, err = storageSettings(map[string]string{"secret": "very-secret"})
	require.ErrorContains(t, err, `unknown option "secret"`)
	require.NotContains(t, err.Error(), "very-secret")

	_, err = storageSettings(map[string]string{"region": "a", "aws_region": "b"})
	require.ErrorContains(t, err, "another name for the same setting differ")
}

func TestStorageSettingsRetryBudget(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "5m": 5 * time.Minute, "120": 2 * time.Minute, "0.5": 500 * time.Millisecond} {
		s, err := storageSettings(map[string]string{"retry_budget": in})
		require.NoError(t, err, in)
		require.Equal(t, storage.Settings{RetryBudget: want}, s, in)
	}
	for _, bad := range []string{"0", "-1s", "soon", ""} {
		_, err := storageSettings(map[string]string{"retry_budget": bad})
		if bad == "" {
			require.NoError(t, err, "empty: not set")
			continue
		}
		require.ErrorContains(t, err, "retry_budget", bad)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, bad)
	}
}
