package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
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
		{"gs://b/p", Settings{Region: "x"}, "storage setting region does not apply to gs://"},
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
