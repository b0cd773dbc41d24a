package testserver

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

func TestMain(m *testing.M) {
	defer StopAll()
	m.Run()
}

var validBucket = regexp.MustCompile(`^[a-z0-9]([a-z0-9]|-[a-z0-9])*$`)

func TestBucketName(t *testing.T) {
	for _, name := range []string{"x", "With Spaces/And_Slashes--and--dashes", strings.Repeat("Long", 40), "---"} {
		t.Run(name, func(t *testing.T) {
			n := bucketName(t)
			require.True(t, validBucket.MatchString(n), n)
			require.GreaterOrEqual(t, len(n), 3, n)
			require.LessOrEqual(t, len(n), 63, n)
		})
	}
	require.NotEqual(t, bucketName(t), bucketName(t), "names are unique")
}

func TestFindBinary(t *testing.T) {
	t.Setenv("LOCH_MINIO", filepath.Join(t.TempDir(), "no-such-minio"))
	_, err := findBinary("minio", "LOCH_MINIO")
	require.ErrorContains(t, err, "make tools")

	bin := filepath.Join(t.TempDir(), "minio")
	require.NoError(t, os.WriteFile(bin, nil, 0o755))
	t.Setenv("LOCH_MINIO", bin)
	got, err := findBinary("minio", "LOCH_MINIO")
	require.NoError(t, err)
	require.Equal(t, bin, got)

	t.Setenv("LOCH_MINIO", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	_, err = findBinary("minio", "LOCH_MINIO")
	require.ErrorContains(t, err, "run `make tools`")
}

func TestSkipCloud(t *testing.T) {
	t.Setenv("LOCH_SKIP_CLOUD", "1")
	var skipped bool
	t.Run("inner", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		MinIO(t)
	})
	require.True(t, skipped)
}

func TestServers(t *testing.T) {
	for name, start := range map[string]func(testing.TB) Bucket{"minio": MinIO, "gcs": GCS, "azurite": Azurite} {
		t.Run(name, func(t *testing.T) {
			a, b := start(t), start(t)
			require.NotEqual(t, a.Name, b.Name, "a fresh bucket each time")
			require.Equal(t, a.Endpoint, b.Endpoint, "one shared server")
			require.True(t, strings.HasPrefix(a.Endpoint, "http://127.0.0.1:"), a.Endpoint)
			require.Contains(t, a.URL, a.Name)
			for k, v := range b.Env {
				require.Equal(t, v, os.Getenv(k), "%s is set", k)
			}
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, a.Endpoint, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err, "the server answers")
			resp.Body.Close()
		})
	}
}

func TestStopAllThenRestart(t *testing.T) {
	GCS(t)
	StopAll()
	b := GCS(t)
	require.NotZero(t, httpStatus(b.Endpoint+"/storage/v1/b"), "a new server answers")
}

// TestOwnMinIORestart: a test's own MinIO server stops (refusing
// connections) and starts again on the same endpoint with the same data.
func TestOwnMinIORestart(t *testing.T) {
	ctx := context.Background()
	m := OwnMinIO(t)
	b := m.Bucket(t)
	require.NotEqual(t, MinIO(t).Endpoint, m.Endpoint(), "not the shared server")
	settings := storage.WithSettings(storage.Settings{AccessKeyID: MinIOAccessKey, SecretAccessKey: MinIOSecretKey})
	st, err := storage.Open(ctx, b.URL, settings, storage.WithRetryPolicy(storage.RetryPolicy{MaxAttempts: 1}))
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Put(ctx, "k", []byte("v")))

	m.Stop(t)
	_, err = st.Get(ctx, "k")
	require.ErrorIs(t, err, storage.ErrTransient, "a stopped server refuses connections")
	require.Zero(t, httpStatus(m.Endpoint()+"/minio/health/live"))

	m.Start(t)
	require.Equal(t, b.Endpoint, m.Endpoint())
	got, err := st.Get(ctx, "k")
	require.NoError(t, err, "the same data, on the same port")
	require.Equal(t, "v", string(got))
}
