package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/testserver"
)

func TestSettingsNeverPrintSecrets(t *testing.T) {
	s := Settings{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKeyID: "AKIDEXAMPLE",
		SecretAccessKey: "very-secret-key", SessionToken: "very-secret-token"}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, s)
		if strings.Contains(out, "very-secret") {
			t.Errorf("%s printed a secret: %s", format, out)
		}
		if !strings.Contains(out, "AKIDEXAMPLE") || !strings.Contains(out, "secret_access_key=<set>") {
			t.Errorf("%s: %s, want the key id and <set> for the secret", format, out)
		}
	}
}

func TestSettingsChecked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		url  string
		s    Settings
		want string // "" when Open succeeds
	}{
		{"s3://b/p?endpoint=http://127.0.0.1:1", Settings{AccessKeyID: "a", SecretAccessKey: "very-secret"}, ""},
		{"s3://b/p?endpoint=http://127.0.0.1:1", Settings{AccessKeyID: "a"}, "give access_key_id and secret_access_key together"},
		{"s3://b/p?endpoint=http://127.0.0.1:1", Settings{SessionToken: "very-secret"}, "session_token without"},
		{"s3://b/p", Settings{Endpoint: "ftp://x", SecretAccessKey: "very-secret", AccessKeyID: "a"}, "bad S3 endpoint"},
		{"gs://b/p", Settings{Region: "x"}, "storage setting region does not apply to gs:// (only to s3://)"},
		{"az://c/p", Settings{AccessKeyID: "a", SecretAccessKey: "very-secret"}, "storage setting access_key_id does not apply to az://"},
		{"s3://b/p", Settings{AzureAccount: "acct"}, "storage setting account_name does not apply to s3://"},
		{"gs://b/p", Settings{GoogleCredentialsFile: "/k.json", GoogleCredentialsJSON: "very-secret"}, "not both"},
		{"gs://b/p", Settings{Endpoint: "ftp://x"}, "bad GCS endpoint"},
		{"az://c/p", Settings{AzureAccountKey: "very-secret"}, "account_key or sas_token without account_name"},
		{"az://c/p", Settings{AzureConnectionString: "very-secret", AzureAccount: "a"}, "give no other Azure setting"},
		{"az://c/p", Settings{AzureAccount: "a", AzureAccountKey: "very-secret", AzureSASToken: "very-secret"}, "not both"},
		{"mem://settings", Settings{SecretAccessKey: "very-secret"}, "storage setting secret_access_key does not apply to mem://"},
	} {
		st, err := Open(ctx, tc.url, WithSettings(tc.s))
		if tc.want == "" {
			if err != nil {
				t.Errorf("Open(%s, %v): %v", tc.url, tc.s, err)
				continue
			}
			st.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalidURL) {
			t.Errorf("Open(%s, %v) = %v, want ErrInvalidURL %q", tc.url, tc.s, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "very-secret") {
			t.Errorf("Open(%s): the error shows a secret: %v", tc.url, err)
		}
	}
}

// roundTrip writes and reads back one object through a store opened with
// settings alone, the environment cleared of the server's address and
// credentials.
func roundTrip(t *testing.T, url string, s Settings) {
	t.Helper()
	ctx := context.Background()
	st, err := Open(ctx, url, WithSettings(s), WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatalf("Open(%s, %v): %v", url, s, err)
	}
	defer st.Close()
	if err := st.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("Put through %v: %v", s, err)
	}
	b, err := st.Get(ctx, "k")
	if err != nil || string(b) != "v" {
		t.Fatalf("Get through %v = %q, %v", s, b, err)
	}
}

func TestSettingsGCS(t *testing.T) {
	b := testserver.GCS(t)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	roundTrip(t, b.URL, Settings{Endpoint: b.Endpoint, Anonymous: true})
	roundTrip(t, b.URL, Settings{Endpoint: b.Endpoint + "/storage/v1/", Anonymous: true})

	_, err := Open(context.Background(), b.URL, WithSettings(Settings{Endpoint: b.Endpoint, GoogleCredentialsJSON: `{"very-secret": 1}`}))
	if err == nil || !errors.Is(err, ErrPermission) || strings.Contains(err.Error(), "very-secret") {
		t.Errorf("Open with a bad key = %v, want ErrPermission without the key", err)
	}
}

func TestSettingsAzure(t *testing.T) {
	b := testserver.Azurite(t)
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	endpoint := b.Endpoint + "/" + testserver.AzuriteAccount
	roundTrip(t, b.URL, Settings{Endpoint: endpoint, AzureAccount: testserver.AzuriteAccount, AzureAccountKey: testserver.AzuriteKey})
	conn := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;",
		testserver.AzuriteAccount, testserver.AzuriteKey, endpoint)
	roundTrip(t, b.URL, Settings{AzureConnectionString: conn})

	// A wrong key is refused by the server, and the error shows no key.
	wrong := "d3Jvbmcta2V5LXZlcnktc2VjcmV0LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc="
	st, err := Open(context.Background(), b.URL, WithSettings(Settings{Endpoint: endpoint, AzureAccount: testserver.AzuriteAccount, AzureAccountKey: wrong}),
		WithRetryPolicy(RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Get(context.Background(), "k")
	if err == nil || !errors.Is(err, ErrPermission) || strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), testserver.AzuriteKey) {
		t.Errorf("Get with a wrong key = %v, want ErrPermission without the key", err)
	}
}

func TestParseOptions(t *testing.T) {
	s, err := ParseOptions(map[string]string{"aws_endpoint": "http://127.0.0.1:9000", "region": "eu-west-1",
		"access_key_id": "id", "aws_secret_access_key": "very-secret", "session_token": "tok"})
	require.NoError(t, err)
	require.Equal(t, Settings{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKeyID: "id",
		SecretAccessKey: "very-secret", SessionToken: "tok"}, s)

	_, err = ParseOptions(map[string]string{"secret": "very-secret"})
	require.ErrorContains(t, err, `unknown option "secret"`)
	require.NotContains(t, err.Error(), "very-secret")

	_, err = ParseOptions(map[string]string{"region": "a", "aws_region": "b"})
	require.ErrorContains(t, err, "another name for the same setting differ")
}

func TestParseOptionsRetryBudget(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "5m": 5 * time.Minute, "120": 2 * time.Minute, "0.5": 500 * time.Millisecond} {
		s, err := ParseOptions(map[string]string{"retry_budget": in})
		require.NoError(t, err, in)
		require.Equal(t, Settings{RetryBudget: want}, s, in)
	}
	for _, bad := range []string{"0", "-1s", "soon", ""} {
		_, err := ParseOptions(map[string]string{"retry_budget": bad})
		if bad == "" {
			require.NoError(t, err, "empty: not set")
			continue
		}
		require.ErrorContains(t, err, "retry_budget", bad)
		require.ErrorIs(t, err, base.ErrInvalidArgument, bad)
	}
}
