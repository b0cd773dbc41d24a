// Package testserver runs real object-storage servers for tests: MinIO for
// S3, fake-gcs-server for Google Cloud Storage and Azurite for Azure Blob
// Storage, each on 127.0.0.1 on a free port with a temporary data
// directory.
//
// One server of each kind is started per test binary, on first use, and
// shared; every call gives the test a fresh bucket (or container) with a
// unique name and sets the environment the storage package needs to reach
// it with t.Setenv, so the standard credential paths are what gets
// exercised. Because of t.Setenv, the tests that call it cannot be
// parallel.
//
//	func TestOnS3(t *testing.T) {
//		b := testserver.MinIO(t)
//		st, err := storage.Open(ctx, b.URL)
//		...
//	}
//
// The servers stop when the test binary exits (on Linux the kernel kills
// them when the process that started them dies), or earlier through
// StopAll, which a TestMain may call:
//
//	func TestMain(m *testing.M) {
//		defer testserver.StopAll()
//		m.Run()
//	}
//
// The binaries are found through LOCH_MINIO, LOCH_FAKE_GCS and LOCH_AZURITE
// (the Makefile sets them to the pinned versions), else under
// $HOME/.cache/loch/tools (where `make tools` puts them), else on PATH. A
// missing binary fails the test with a message saying to run `make tools`;
// tests are skipped only when LOCH_SKIP_CLOUD=1 is set.
package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Bucket is a fresh bucket or container on a running server.
type Bucket struct {
	// URL opens the bucket with storage.Open, under a key prefix, e.g.
	// "s3://loch-3-testfoo/prefix?endpoint=http://127.0.0.1:41234".
	URL string
	// Name is the bucket or container name.
	Name string
	// Endpoint is the server's base URL, "http://127.0.0.1:port".
	Endpoint string
	// Env is the environment the URL needs (credentials, emulator address).
	// It has already been set for the test with t.Setenv.
	Env map[string]string
}

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 90 * time.Second

// server is one server process: a shared one, or a test's own (see
// OwnMinIO).
type server struct {
	kind string // "minio", "fake-gcs-server", "azurite"

	mu       sync.Mutex
	started  bool
	err      error // why starting failed; sticky
	cmd      *exec.Cmd
	dir      string
	port     int
	endpoint string
	exited   chan struct{}
	// how it was started, for a restart on the same port and directory
	bin     string
	startFn func(bin, dir string, port int) *exec.Cmd
	readyFn func(endpoint string) bool
}

var (
	minioServer   = &server{kind: "minio"}
	gcsServer     = &server{kind: "fake-gcs-server"}
	azuriteServer = &server{kind: "azurite"}

	bucketSeq atomic.Int64
)

// StopAll stops every server this process started and removes their data.
// Tests that use them afterwards start them again.
func StopAll() {
	for _, s := range []*server{minioServer, gcsServer, azuriteServer} {
		s.stop()
	}
}

// ensure starts the server on first use, with start building the command
// for a port and a data directory and ready telling when it serves.
func (s *server) ensure(t testing.TB, binEnv string, start func(bin, dir string, port int) *exec.Cmd, ready func(endpoint string) bool) string {
	t.Helper()
	if os.Getenv("LOCH_SKIP_CLOUD") == "1" {
		t.Skipf("LOCH_SKIP_CLOUD=1: skipping a test that needs %s", s.kind)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		select {
		case <-s.exited:
			s.err = fmt.Errorf("%s exited while tests were running; log in %s", s.kind, s.logPath())
		default:
		}
	}
	if s.err != nil {
		t.Fatalf("testserver: %v", s.err)
	}
	if s.started {
		return s.endpoint
	}
	bin, err := findBinary(s.kind, binEnv)
	if err != nil {
		s.err = err
		t.Fatalf("testserver: %v", err)
	}
	if err := s.start(bin, start, ready); err != nil {
		s.err = err
		t.Fatalf("testserver: %v", err)
	}
	return s.endpoint
}

func (s *server) logPath() string { return filepath.Join(s.dir, "server.log") }

// start runs the server, trying a few ports in case one is taken between
// picking it and the server binding it.
func (s *server) start(bin string, start func(bin, dir string, port int) *exec.Cmd, ready func(endpoint string) bool) error {
	sweepStaleDirs()
	s.bin, s.startFn, s.readyFn = bin, start, ready
	var lastErr error
	for range 3 {
		dir, err := os.MkdirTemp("", fmt.Sprintf("loch-testserver-%s-%d-", s.kind, os.Getpid()))
		if err != nil {
			return fmt.Errorf("start %s: %w", s.kind, err)
		}
		port, err := freePort()
		if err != nil {
			return fmt.Errorf("start %s: %w", s.kind, err)
		}
		s.dir, s.port = dir, port
		s.endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			return fmt.Errorf("start %s: %w", s.kind, err)
		}
		if lastErr = s.launch(); lastErr == nil {
			s.started = true
			return nil
		}
		os.RemoveAll(dir)
	}
	return lastErr
}

// launch runs the server on s.port and s.dir, the log appended to, and
// waits until it serves; on failure nothing is left running.
func (s *server) launch() error {
	cmd := s.startFn(s.bin, filepath.Join(s.dir, "data"), s.port)
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.kind, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = s.dir
	s.exited = make(chan struct{})
	err = startKillable(cmd, s.exited)
	logf.Close()
	if err != nil {
		return fmt.Errorf("start %s (%s): %w", s.kind, s.bin, err)
	}
	s.cmd = cmd
	if err := s.waitReady(s.readyFn); err != nil {
		s.kill()
		return err
	}
	return nil
}

func (s *server) waitReady(ready func(endpoint string) bool) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("%s exited at start:\n%s", s.kind, tail(s.logPath()))
		default:
		}
		if ready(s.endpoint) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %v:\n%s", s.kind, startTimeout, tail(s.logPath()))
}

func (s *server) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

func (s *server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return
	}
	s.kill()
	os.RemoveAll(s.dir)
	s.started, s.err = false, nil
}

// startKillable starts cmd from a goroutine locked to its OS thread, which
// stays alive until cmd exits. On Linux the child gets SIGKILL when that
// thread dies, so it cannot outlive the test binary, even one that was
// killed. exited is closed when cmd has exited.
func startKillable(cmd *exec.Cmd, exited chan struct{}) error {
	cmd.SysProcAttr = sysProcAttr()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			errc <- err
			close(exited)
			return
		}
		errc <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	return <-errc
}

// sweepStaleDirs removes the data directories of servers whose test
// binary is gone (killed before it could clean up).
func sweepStaleDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "loch-testserver-*"))
	for _, m := range matches {
		parts := strings.Split(filepath.Base(m), "-")
		if len(parts) < 4 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-2])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if !processAlive(pid) {
			os.RemoveAll(m)
		}
	}
}

// findBinary locates a server binary: $envVar, then the tools cache, then
// PATH.
func findBinary(kind, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; run `make tools`", envVar, p, err)
		}
		return p, nil
	}
	name := kind
	if kind == "azurite" {
		name = "azurite-blob"
	}
	var candidates []string
	if home, err := os.UserHomeDir(); err == nil {
		tools := filepath.Join(home, ".cache", "loch", "tools")
		candidates = append(candidates, filepath.Join(tools, "bin", name))
		if kind == "azurite" {
			candidates = append(candidates, filepath.Join(tools, "azurite", "node_modules", ".bin", name))
		}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (looked at $%s, %s and PATH): run `make tools` to install the pinned version, or set LOCH_SKIP_CLOUD=1 to skip tests that need it",
		name, envVar, strings.Join(candidates, ", "))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the end of a log file, for failure messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// httpStatus GETs url and returns the status, or 0 if no answer came.
func httpStatus(url string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// bucketName returns a fresh bucket name valid on S3, GCS and Azure: 3 to
// 63 lowercase letters, digits and single hyphens, made from a sequence
// number and the test's name.
func bucketName(t testing.TB) string {
	var b strings.Builder
	dash := true
	for _, r := range strings.ToLower(t.Name()) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	slug := strings.Trim(b.String(), "-")
	name := fmt.Sprintf("loch-%d-%s", bucketSeq.Add(1), slug)
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return strings.TrimRight(name, "-")
}

func setenv(t testing.TB, env map[string]string) {
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// cleanEnv returns the environment for a server process: this process's,
// less the cloud credentials and endpoints a developer may have set.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "AZURE_") ||
			strings.HasPrefix(name, "GOOGLE_") || strings.HasPrefix(name, "MINIO_") ||
			strings.HasPrefix(name, "STORAGE_EMULATOR") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
