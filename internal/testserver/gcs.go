package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// GCS returns a fresh bucket on the shared fake-gcs-server, starting it if
// needed. It sets STORAGE_EMULATOR_HOST, which the Cloud Storage client
// honours (no authentication); the URL is gs://<bucket>/prefix.
func GCS(t testing.TB) Bucket {
	t.Helper()
	endpoint := gcsServer.ensure(t, "LOCH_FAKE_GCS", func(bin, dir string, port int) *exec.Cmd {
		host := "127.0.0.1:" + strconv.Itoa(port)
		cmd := exec.Command(bin,
			"-scheme", "http",
			"-host", "127.0.0.1",
			"-port", strconv.Itoa(port),
			"-backend", "filesystem",
			"-filesystem-root", dir,
			"-public-host", host,
			"-external-url", "http://"+host,
			"-log-level", "warn",
		)
		cmd.Env = cleanEnv()
		return cmd
	}, func(endpoint string) bool {
		return httpStatus(endpoint+"/storage/v1/b") == 200
	})

	name := bucketName(t)
	body, _ := json.Marshal(map[string]string{"name": name})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/storage/v1/b?project=loch-test", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("testserver: create GCS bucket %q: %v", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("testserver: create GCS bucket %q: %v", name, err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("testserver: create GCS bucket %q: %s: %s", name, resp.Status, msg)
	}

	env := map[string]string{"STORAGE_EMULATOR_HOST": strings.TrimPrefix(endpoint, "http://")}
	setenv(t, env)
	return Bucket{
		URL:      fmt.Sprintf("gs://%s/prefix", name),
		Name:     name,
		Endpoint: endpoint,
		Env:      env,
	}
}
