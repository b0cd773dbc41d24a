package base_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
)

// A package's own kinds, defined as the package doc says.
var (
	errInvalid = base.Mark(base.ErrInvalidArgument, "pkg: invalid", nil)
	errBucket  = base.Mark(base.ErrNotFound, "bucket not found", nil)
)

func TestMark(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	for _, tc := range []struct {
		name    string
		err     error
		msg     string
		is      []error // errors.Is matches each
		isNot   []error // and none of these
		wrapped error   // errors.As finds this *fs.PathError, when not nil
	}{
		{
			name:  "leaf",
			err:   base.Mark(base.ErrCorrupt, "corrupt chunk: magic \"LCHX\", want \"LCHK\"", nil),
			msg:   `corrupt chunk: magic "LCHX", want "LCHK"`,
			is:    []error{base.ErrCorrupt},
			isNot: []error{base.ErrNotFound, base.ErrInvalidArgument},
		},
		{
			name:    "with a cause",
			err:     base.Mark(base.ErrPermission, "permission denied", cause),
			msg:     "permission denied: open /x: file does not exist",
			is:      []error{base.ErrPermission, fs.ErrNotExist, cause},
			isNot:   []error{base.ErrNotFound},
			wrapped: cause,
		},
		{
			name:    "no text of its own",
			err:     base.Mark(base.ErrCorrupt, "", cause),
			msg:     "open /x: file does not exist",
			is:      []error{base.ErrCorrupt, fs.ErrNotExist},
			wrapped: cause,
		},
		{
			name:  "a package's own kind",
			err:   errInvalid,
			msg:   "pkg: invalid",
			is:    []error{errInvalid, base.ErrInvalidArgument},
			isNot: []error{base.ErrCorrupt},
		},
		{
			name:  "marked with a package's own kind",
			err:   fmt.Errorf("open s3://b: %w", base.Mark(errBucket, `bucket "b" not found`, nil)),
			msg:   `open s3://b: bucket "b" not found`,
			is:    []error{errBucket, base.ErrNotFound},
			isNot: []error{errInvalid},
		},
		{
			name:  "a kind that is no shared one",
			err:   base.Mark(io.ErrUnexpectedEOF, "range [4, 8) past end of 6-byte object", nil),
			msg:   "range [4, 8) past end of 6-byte object",
			is:    []error{io.ErrUnexpectedEOF},
			isNot: []error{base.ErrCorrupt, base.ErrNotFound},
		},
		{
			name: "no kind",
			err:  base.Mark(nil, "context", cause),
			msg:  "context: open /x: file does not exist",
			is:   []error{fs.ErrNotExist},
		},
		{
			name:  "Markf",
			err:   base.Markf(base.ErrInvalidArgument, "batch size %d, want at least %d", 0, 1),
			msg:   "batch size 0, want at least 1",
			is:    []error{base.ErrInvalidArgument},
			isNot: []error{errInvalid},
		},
		{
			name:    "Markf with %w",
			err:     base.Markf(base.ErrCorrupt, "decode sample %d: %w", 3, cause),
			msg:     "decode sample 3: open /x: file does not exist",
			is:      []error{base.ErrCorrupt, fs.ErrNotExist},
			wrapped: cause,
		},
		{
			name: "Markf with two %w",
			err:  base.Markf(base.ErrConflict, "%w and %w", errInvalid, cause),
			msg:  "pkg: invalid and open /x: file does not exist",
			is:   []error{base.ErrConflict, errInvalid, base.ErrInvalidArgument, fs.ErrNotExist},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, tc.err, tc.msg)
			for _, k := range tc.is {
				require.ErrorIs(t, tc.err, k)
			}
			for _, k := range tc.isNot {
				require.NotErrorIs(t, tc.err, k)
			}
			var e *base.Error
			require.ErrorAs(t, tc.err, &e)
			if tc.wrapped != nil {
				var pe *fs.PathError
				require.ErrorAs(t, tc.err, &pe)
				require.Same(t, tc.wrapped, pe)
			}
		})
	}
}

func TestUnwrap(t *testing.T) {
	cause := errors.New("cause")
	for _, tc := range []struct {
		err  error
		want []error
	}{
		{base.Mark(base.ErrCorrupt, "m", cause), []error{base.ErrCorrupt, cause}},
		{base.Mark(base.ErrCorrupt, "m", nil), []error{base.ErrCorrupt}},
		{base.Mark(nil, "m", cause), []error{cause}},
		{base.Mark(nil, "m", nil), nil},
		{base.Markf(base.ErrExists, "key %q", "k"), []error{base.ErrExists}},
	} {
		require.Equal(t, tc.want, tc.err.(interface{ Unwrap() []error }).Unwrap(), "%v", tc.err)
	}
}

// Each shared kind is its own: none matches another, and each has the
// text that ends the messages it is the innermost cause of.
func TestSentinels(t *testing.T) {
	all := map[error]string{
		base.ErrNotFound:        "not found",
		base.ErrExists:          "already exists",
		base.ErrCorrupt:         "corrupt",
		base.ErrConflict:        "conflict",
		base.ErrInvalidArgument: "invalid argument",
		base.ErrNewerFormat:     "newer format version",
		base.ErrReadOnly:        "read-only",
		base.ErrPermission:      "permission denied",
	}
	for a, msg := range all {
		require.EqualError(t, a, msg)
		for b := range all {
			require.Equal(t, a == b, errors.Is(a, b), "%v is %v", a, b)
		}
	}
}
