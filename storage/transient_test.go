package storage

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsTransient: the failures of a server going away are retried; a
// cancelled call and plain errors are not.
func TestIsTransient(t *testing.T) {
	closedWrite := &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"reset":             {&url.Error{Op: "Put", URL: "http://x", Err: syscall.ECONNRESET}, true},
		"refused":           {fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		"closed connection": {fmt.Errorf("readfrom tcp: %w", closedWrite), true},
		"deadline":          {context.DeadlineExceeded, true},
		"closed idle":       {&url.Error{Op: "Put", URL: "http://x", Err: errors.New("http: server closed idle connection")}, true},
		"cancelled":         {context.Canceled, false},
		"plain":             {errors.New("bad request"), false},
		"nil":               {nil, false},
	} {
		require.Equal(t, tc.want, isTransient(tc.err), name)
	}
}
