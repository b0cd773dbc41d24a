package testserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// MinIO's root credentials, which the S3 environment set by MinIO carries.
const (
	MinIOAccessKey = "lochtestaccess"
	MinIOSecretKey = "lochtestsecret-9c1f2e"
)

// MinIO returns a fresh bucket on the shared MinIO server, starting it if
// needed. It sets AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION,
// points the shared config and credentials files at nothing, turns off
// EC2 metadata lookups, and clears AWS_PROFILE, AWS_SESSION_TOKEN and the
// AWS_ENDPOINT_URL variables; the URL names the endpoint:
//
//	s3://<bucket>/prefix?endpoint=http://127.0.0.1:<port>
//
// (path-style addressing follows from the IP address).
func MinIO(t testing.TB) Bucket {
	t.Helper()
	endpoint := minioServer.ensure(t, "LOCH_MINIO", minioCommand, minioReady)
	name := createMinIOBucket(t, endpoint)
	env := minioEnv(t)
	setenv(t, env)
	return Bucket{
		URL:      fmt.Sprintf("s3://%s/prefix?endpoint=%s", name, endpoint),
		Name:     name,
		Endpoint: endpoint,
		Env:      env,
	}
}

// minioCommand is the command line of a MinIO server on port serving dir.
func minioCommand(bin, dir string, port int) *exec.Cmd {
	console, err := freePort()
	if err != nil {
		console = port + 1
	}
	cmd := exec.Command(bin, "server", "--quiet",
		"--address", fmt.Sprintf("127.0.0.1:%d", port),
		"--console-address", fmt.Sprintf("127.0.0.1:%d", console),
		"--certs-dir", filepath.Join(filepath.Dir(dir), "certs"),
		dir)
	cmd.Env = append(cleanEnv(),
		"MINIO_ROOT_USER="+MinIOAccessKey,
		"MINIO_ROOT_PASSWORD="+MinIOSecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		"MINIO_CI_CD=1",
	)
	return cmd
}

func minioReady(endpoint string) bool {
	return httpStatus(endpoint+"/minio/health/ready") == 200
}

// createMinIOBucket makes a fresh bucket on the MinIO server at endpoint
// and returns its name.
func createMinIOBucket(t testing.TB, endpoint string) string {
	t.Helper()
	name := bucketName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(MinIOAccessKey, MinIOSecretKey, ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("testserver: create MinIO bucket %q: %v", name, err)
	}
	return name
}

// minioEnv is the environment that reaches a MinIO server with the
// standard credential chain, and nothing else.
func minioEnv(t testing.TB) map[string]string {
	none := filepath.Join(t.TempDir(), "none")
	return map[string]string{
		"AWS_ACCESS_KEY_ID":           MinIOAccessKey,
		"AWS_SECRET_ACCESS_KEY":       MinIOSecretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "us-east-1",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_S3_USE_PATH_STYLE":       "",
	}
}

// MinIOServer is a MinIO server of one test's own (see OwnMinIO), which
// the test may stop and start again, on the same port and data directory,
// to make a storage outage.
type MinIOServer struct {
	srv *server
}

// OwnMinIO starts a MinIO server for t alone, not the shared one, and
// stops it and removes its data when t ends. Unlike MinIO it sets no
// environment, so that tests with servers of their own may run in
// parallel: a store reaches its buckets with static credentials given in
// code (MinIOAccessKey and MinIOSecretKey, e.g. as storage.Settings), and
// Bucket.Env lists the environment that would do instead, unset.
func OwnMinIO(t testing.TB) *MinIOServer {
	t.Helper()
	if os.Getenv("LOCH_SKIP_CLOUD") == "1" {
		t.Skip("LOCH_SKIP_CLOUD=1: skipping a test that needs minio")
	}
	bin, err := findBinary("minio", "LOCH_MINIO")
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	m := &MinIOServer{srv: &server{kind: "minio"}}
	m.srv.mu.Lock()
	defer m.srv.mu.Unlock()
	if err := m.srv.start(bin, minioCommand, minioReady); err != nil {
		t.Fatalf("testserver: %v", err)
	}
	t.Cleanup(m.srv.stop)
	return m
}

// Endpoint is the server's base URL, "http://127.0.0.1:port"; it stays the
// same through Stop and Start.
func (m *MinIOServer) Endpoint() string { return m.srv.endpoint }

// Bucket makes a fresh bucket on the server (which must be running).
func (m *MinIOServer) Bucket(t testing.TB) Bucket {
	t.Helper()
	name := createMinIOBucket(t, m.srv.endpoint)
	return Bucket{
		URL:      fmt.Sprintf("s3://%s/prefix?endpoint=%s", name, m.srv.endpoint),
		Name:     name,
		Endpoint: m.srv.endpoint,
		Env:      minioEnv(t),
	}
}

// Stop kills the server at once, as a crash would: requests in flight
// fail and new connections are refused until Start. Its data stays. Like
// Start it may be called from any goroutine (it reports a misuse with
// t.Errorf).
func (m *MinIOServer) Stop(t testing.TB) {
	t.Helper()
	s := m.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		t.Errorf("testserver: stop %s: not running", s.kind)
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Start starts the stopped server again on its port and data directory,
// and returns once it serves. A test that calls it from a goroutine of its
// own must have the goroutine end before the test does.
func (m *MinIOServer) Start(t testing.TB) {
	t.Helper()
	s := m.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		t.Errorf("testserver: start %s: already running", s.kind)
		return
	}
	// The port was free a moment ago; another process may take it, so
	// try for a while before giving up.
	var err error
	for range 5 {
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("testserver: restart %s on %s: %v", s.kind, s.endpoint, err)
}

// Stores names the stores a test of local and object storage runs on:
// StoreURL's where.
var Stores = []string{"local", "minio"}

// StoreURL returns a fresh dataset location on where, one of Stores: a path
// under t's temporary directory, or a fresh MinIO bucket (see MinIO).
func StoreURL(t testing.TB, where string) string {
	t.Helper()
	if where == "minio" {
		return MinIO(t).URL
	}
	return filepath.Join(t.TempDir(), "ds")
}

// Outages are the storage outages loch rides out by default, which tests
// of the retry policy stop a server for: 2, 10 and 30 s.
var Outages = []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second}

// EachOutage runs f in a parallel subtest of t for each of Outages, with a
// MinIO server of the subtest's own (OwnMinIO) for f to stop and start:
// the outages run at once, so the whole takes about the longest.
func EachOutage(t *testing.T, f func(t *testing.T, m *MinIOServer, outage time.Duration)) {
	for _, outage := range Outages {
		t.Run(outage.String(), func(t *testing.T) {
			t.Parallel()
			f(t, OwnMinIO(t), outage)
		})
	}
}
