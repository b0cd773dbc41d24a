package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

// The cross-process test re-executes the test binary; in the children
// these variables say what to do.
const (
	childDirEnv = "LOCH_STORAGE_TEST_CHILD_DIR"
	childIDEnv  = "LOCH_STORAGE_TEST_CHILD_ID"
)

// TestLocalPutIfAbsentAcrossProcesses races PutIfAbsent on the same keys
// from several processes: for each key exactly one process wins, and the
// object holds the winner's bytes.
func TestLocalPutIfAbsentAcrossProcesses(t *testing.T) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		runChild(t, dir, os.Getenv(childIDEnv))
		return
	}
	const procs, keys = 6, 40
	dir := t.TempDir()
	children := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalPutIfAbsentAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), childDirEnv+"="+dir, childIDEnv+"="+strconv.Itoa(i), "LOCH_STORAGE_TEST_KEYS="+strconv.Itoa(keys))
		outs[i] = new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		require.NoError(t, cmd.Start())
		children[i] = cmd
	}
	// Let them all get ready, then start them at once.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	wins := make(map[string]string) // key -> winning child
	for i, cmd := range children {
		require.NoError(t, cmd.Wait(), "child %d:\n%s", i, outs[i])
		for line := range strings.Lines(outs[i].String()) {
			key, ok := strings.CutPrefix(strings.TrimSpace(line), "WON ")
			if !ok {
				continue
			}
			prev, dup := wins[key]
			require.False(t, dup, "key %s won by both child %s and child %d", key, prev, i)
			wins[key] = strconv.Itoa(i)
		}
	}
	require.Len(t, wins, keys, "every key has a winner")
	st := open(t, filepath.Join(dir, "store"))
	for key, winner := range wins {
		got, err := st.Get(context.Background(), key)
		require.NoError(t, err)
		require.Equal(t, "child "+winner, string(got), key)
	}
	var listed int
	require.NoError(t, st.List(context.Background(), "", func(storage.Attrs) error { listed++; return nil }))
	require.Equal(t, keys, listed, "no temporary files are listed")
}

func runChild(t *testing.T, dir, id string) {
	keys, err := strconv.Atoi(os.Getenv("LOCH_STORAGE_TEST_KEYS"))
	require.NoError(t, err)
	st := open(t, filepath.Join(dir, "store"))
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for k := range keys {
		key := fmt.Sprintf("k/%03d", k)
		err := st.PutIfAbsent(context.Background(), key, []byte("child "+id))
		switch {
		case err == nil:
			fmt.Printf("WON %s\n", key)
		case errors.Is(err, storage.ErrExists):
		default:
			t.Fatalf("child %s: %v", id, err)
		}
	}
}

func TestLocalLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	st := open(t, dir)
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "a/b", []byte("1")))
	require.NoError(t, st.Put(ctx, "a/b", []byte("2")))
	require.NoError(t, st.PutIfAbsent(ctx, "a/c", []byte("3")))
	require.ErrorIs(t, st.PutIfAbsent(ctx, "a/c", []byte("4")), storage.ErrExists)
	var names []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	}))
	require.Equal(t, []string{"a/b", "a/c"}, names, "only the objects are on disk")
}

func TestLocalCreatesDirectoryOnFirstWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not", "yet")
	st := open(t, dir)
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "Open does not create the directory")
	_, err = st.Get(context.Background(), "x")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, st.List(context.Background(), "", func(storage.Attrs) error { return nil }))
	require.NoError(t, st.Put(context.Background(), "x", []byte("x")))
	_, err = os.Stat(filepath.Join(dir, "x"))
	require.NoError(t, err)
}

func TestLocalOpenOnAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, nil, 0o644))
	_, err := storage.Open(context.Background(), f)
	require.ErrorIs(t, err, storage.ErrInvalidURL)
	require.ErrorContains(t, err, "not a directory")
}

// TestLocalRangeReadsSeeWrites: the files a local store keeps open for
// range reads never serve a replaced or deleted object, and reading more
// objects than it keeps open closes the oldest.
func TestLocalRangeReadsSeeWrites(t *testing.T) {
	ctx := context.Background()
	s, err := storage.Open(ctx, t.TempDir())
	require.NoError(t, err)
	buf := make([]byte, 3)
	require.NoError(t, s.Put(ctx, "a/k", []byte("old bytes")))
	require.NoError(t, s.ReadRange(ctx, "a/k", 4, buf))
	require.Equal(t, "byt", string(buf))
	require.NoError(t, s.Put(ctx, "a/k", []byte("new data!")))
	require.NoError(t, s.ReadRange(ctx, "a/k", 4, buf))
	require.Equal(t, "dat", string(buf))
	err = s.ReadRange(ctx, "a/k", 8, buf)
	require.Error(t, err, "the new object's size bounds the read")
	require.NoError(t, s.Delete(ctx, "a/k"))
	require.ErrorIs(t, s.ReadRange(ctx, "a/k", 0, buf), storage.ErrNotFound)
	for i := range 300 {
		key := fmt.Sprintf("many/%03d", i)
		require.NoError(t, s.Put(ctx, key, []byte(fmt.Sprintf("%03d", i))))
		require.NoError(t, s.ReadRange(ctx, key, 0, buf))
		require.Equal(t, fmt.Sprintf("%03d", i), string(buf))
	}
	for i := range 300 {
		require.NoError(t, s.ReadRange(ctx, fmt.Sprintf("many/%03d", i), 0, buf))
		require.Equal(t, fmt.Sprintf("%03d", i), string(buf))
	}
}
