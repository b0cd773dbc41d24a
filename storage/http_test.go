package storage

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var quickRetry = RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, ReadTimeout: 5 * time.Second}

func TestReadURLHTTP(t *testing.T) {
	var flaky atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/a/b.txt", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			w.Write([]byte("query " + r.URL.RawQuery))
			return
		}
		w.Write([]byte("bytes of b"))
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if flaky.Add(1) == 1 {
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	})
	mux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusTeapot) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write(bytes.Repeat([]byte("z"), 10000)) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	opt := WithRetryPolicy(quickRetry)

	b, err := ReadURL(ctx, srv.URL+"/a/b.txt", opt)
	require.NoError(t, err)
	require.Equal(t, "bytes of b", string(b))
	b, err = ReadURL(ctx, srv.URL+"/a/b.txt?v=2&w=x", opt)
	require.NoError(t, err)
	require.Equal(t, "query v=2&w=x", string(b), "the query is part of the object's name")

	b, err = ReadURL(ctx, srv.URL+"/flaky", opt)
	require.NoError(t, err, "429 is retried")
	require.Equal(t, "ok", string(b))

	_, err = ReadURL(ctx, srv.URL+"/down?token=hush", opt)
	require.ErrorIs(t, err, ErrTransient)
	require.Regexp(t, `gave up after \S+ \(3 attempts\)`, err.Error())
	require.NotContains(t, err.Error(), "hush")
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "get", se.Op)

	_, err = ReadURL(ctx, srv.URL+"/missing", opt)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = ReadURL(ctx, srv.URL+"/teapot", opt)
	require.ErrorContains(t, err, "418")

	_, err = ReadURL(ctx, srv.URL+"/big", opt, WithMaxBytes(9999))
	require.ErrorIs(t, err, ErrTooLarge)
	b, err = ReadURL(ctx, srv.URL+"/big", opt, WithMaxBytes(10000))
	require.NoError(t, err)
	require.Len(t, b, 10000)

	_, err = ReadURL(ctx, "http://user:pw@"+srv.Listener.Addr().String()+"/a/b.txt", opt)
	require.ErrorIs(t, err, ErrInvalidURL)
	require.NotContains(t, err.Error(), "pw")
}

func TestHTTPStoreRangeAndStat(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f", time.Unix(1700000000, 0), bytes.NewReader([]byte("0123456789")))
	}))
	defer srv.Close()
	ctx := context.Background()
	st := &httpStore{origin: srv.URL}
	a, err := st.Stat(ctx, "/f")
	require.NoError(t, err)
	require.EqualValues(t, 10, a.Size)
	require.Equal(t, int64(1700000000), a.ModTime.Unix())
	dst := make([]byte, 4)
	require.NoError(t, st.ReadRange(ctx, "/f", 3, dst))
	require.Equal(t, "3456", string(dst))
	require.ErrorIs(t, st.Put(ctx, "/f", nil), ErrPermission)
}

func TestReadURLLocalMaxBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, dir)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Put(ctx, "obj", make([]byte, 50)))
	_, err = ReadURL(ctx, dir+"/obj", WithMaxBytes(49))
	require.ErrorIs(t, err, ErrTooLarge)
	b, err := ReadURL(ctx, dir+"/obj", WithMaxBytes(50))
	require.NoError(t, err)
	require.Len(t, b, 50)
}
