package main

import (
	"testing"

	"github.com/stretchr/testify/require"

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
