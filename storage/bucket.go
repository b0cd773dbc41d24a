package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"google.golang.org/api/googleapi"
)

// bucketStore is a Store over a gocloud.dev bucket: memblob, s3blob, gcsblob
// or azureblob. Keys are stored under prefix.
type bucketStore struct {
	b      *blob.Bucket
	name   string // the bucket or container, for messages
	prefix string // "" or ending in '/'
	url    string
	// closeFn closes what the store owns besides b (a client); may be nil.
	closeFn func() error
	// shared is set for memory buckets, which outlive the store.
	shared bool
	// probe, if set, asks the service whether the bucket exists. It is run
	// on the first "not found" whose cause the service left ambiguous (a
	// HEAD has no body to say which is missing), and not again once the
	// bucket is known to exist.
	probe       func(ctx context.Context) error
	bucketKnown atomic.Bool
}

func (s *bucketStore) fail(op, key string, err error) error {
	return &Error{Op: op, URL: s.url, Key: key, Err: err}
}

// write uploads data in one call to the driver's Upload, with no
// ContentMD5: gocloud then hands the whole reader to the driver instead of
// streaming it through a pipe (whose error path in azureblob v0.47 crashes
// on a refused conditional write), and S3 learns the size up front.
func (s *bucketStore) write(ctx context.Context, key string, data []byte, ifNotExist bool) error {
	return s.b.Upload(ctx, s.prefix+key, bytes.NewReader(data), &blob.WriterOptions{
		ContentType: "application/octet-stream",
		IfNotExist:  ifNotExist,
	})
}

func (s *bucketStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, s.fail("get", key, err)
	}
	r, err := s.b.NewReader(ctx, s.prefix+key, nil)
	if err != nil {
		return nil, s.fail("get", key, s.mapError(ctx, err))
	}
	defer r.Close()
	size := r.Size()
	data := make([]byte, size)
	n, err := io.ReadFull(r, data)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, s.fail("get", key, truncated(n, int(size)))
		}
		return nil, s.fail("get", key, s.mapError(ctx, err))
	}
	return data, nil
}

func (s *bucketStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("read", key, err)
	}
	if off < 0 {
		return s.fail("read", key, fmt.Errorf("negative offset %d", off))
	}
	if len(dst) == 0 {
		a, err := s.b.Attributes(ctx, s.prefix+key)
		if err != nil {
			return s.fail("read", key, s.mapError(ctx, err))
		}
		if off > a.Size {
			return s.fail("read", key, pastEnd(off, 0, a.Size))
		}
		return nil
	}
	r, err := s.b.NewRangeReader(ctx, s.prefix+key, off, int64(len(dst)), nil)
	if err != nil {
		if httpStatus(err) == 416 {
			// Range Not Satisfiable: off is at or past the end.
			size := int64(-1)
			if a, serr := s.b.Attributes(ctx, s.prefix+key); serr == nil {
				size = a.Size
			}
			return s.fail("read", key, pastEnd(off, len(dst), size))
		}
		return s.fail("read", key, s.mapError(ctx, err))
	}
	defer r.Close()
	n, err := io.ReadFull(r, dst)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if size := r.Size(); off+int64(len(dst)) > size {
			return s.fail("read", key, pastEnd(off, len(dst), size))
		}
		return s.fail("read", key, truncated(n, len(dst)))
	}
	return s.fail("read", key, s.mapError(ctx, err))
}

func (s *bucketStore) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("put", key, err)
	}
	if err := s.write(ctx, key, data, false); err != nil {
		return s.fail("put", key, s.mapError(ctx, err))
	}
	return nil
}

func (s *bucketStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("put-if-absent", key, err)
	}
	err := s.write(ctx, key, data, true)
	if err == nil {
		return nil
	}
	switch gcerrors.Code(err) {
	case gcerrors.FailedPrecondition, gcerrors.AlreadyExists:
		return s.fail("put-if-absent", key, exists())
	}
	switch httpStatus(err) {
	case 409, 412:
		if !isTransientCode(err) {
			return s.fail("put-if-absent", key, exists())
		}
	}
	return s.fail("put-if-absent", key, s.mapError(ctx, err))
}

func (s *bucketStore) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("delete", key, err)
	}
	err := s.b.Delete(ctx, s.prefix+key)
	if err == nil {
		return nil
	}
	mapped := s.mapError(ctx, err)
	if errors.Is(mapped, ErrNotFound) && !IsBucketNotFound(mapped) {
		return nil
	}
	return s.fail("delete", key, mapped)
}

func (s *bucketStore) Stat(ctx context.Context, key string) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, s.fail("stat", key, err)
	}
	a, err := s.b.Attributes(ctx, s.prefix+key)
	if err != nil {
		return Attrs{}, s.fail("stat", key, s.mapError(ctx, err))
	}
	return Attrs{Key: key, Size: a.Size, ModTime: a.ModTime}, nil
}

func (s *bucketStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	if err := validatePrefix(prefix); err != nil {
		return s.fail("list", prefix, err)
	}
	it := s.b.List(&blob.ListOptions{Prefix: s.prefix + prefix})
	for {
		obj, err := it.Next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return s.fail("list", prefix, s.mapError(ctx, err))
		}
		if obj.IsDir {
			continue
		}
		key := strings.TrimPrefix(obj.Key, s.prefix)
		if err := fn(Attrs{Key: key, Size: obj.Size, ModTime: obj.ModTime}); err != nil {
			return err
		}
	}
}

func (s *bucketStore) URL() string { return s.url }

func (s *bucketStore) Close() error {
	if s.shared {
		return nil
	}
	err := s.b.Close()
	if s.closeFn != nil {
		if cerr := s.closeFn(); err == nil {
			err = cerr
		}
	}
	return err
}

// mapError ties a driver error to the package sentinels: not found (the
// bucket's absence told apart where the service says so), permission,
// transient. Anything else is returned as is.
func (s *bucketStore) mapError(ctx context.Context, err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	if isBucketMissing(err) {
		return bucketNotFound(s.name, nil)
	}
	if missingCredentials(err) {
		return denied(fmt.Sprintf("no credentials for bucket %q (set them in the environment, a config file or the cloud's default chain)", s.name), errors.Unwrap(err))
	}
	status := httpStatus(err)
	switch {
	case status == 401 || status == 403 || isPermissionCode(err):
		return permission(s.name, brief(err))
	case status == 404:
		return s.notFound(ctx)
	case isTransient(err):
		return transient(brief(err))
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return s.notFound(ctx)
	case gcerrors.PermissionDenied:
		return permission(s.name, brief(err))
	}
	return brief(err)
}

// missingCredentials reports whether an SDK failed before sending a request
// because it found no credentials anywhere in its chain. The SDKs report
// this only in words.
func missingCredentials(err error) bool {
	msg := err.Error()
	for _, m := range []string{
		"get credentials: ",                                 // aws-sdk-go-v2 signer
		"failed to retrieve credentials",                    // aws-sdk-go-v2
		"could not find default credentials",                // Google ADC
		"DefaultAzureCredential: failed to acquire a token", // azidentity
	} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// briefError keeps a driver error in the chain, for errors.Is and
// errors.As, under a shorter message: the service's own code and words
// rather than the SDKs' layers of request metadata.
type briefError struct {
	msg string
	err error
}

func (b *briefError) Error() string { return b.msg }
func (b *briefError) Unwrap() error { return b.err }

func brief(err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		msg := api.ErrorCode()
		if m := api.ErrorMessage(); m != "" && m != msg {
			msg += ": " + m
		}
		if status := httpStatus(err); status != 0 {
			msg = fmt.Sprintf("HTTP %d %s", status, msg)
		}
		return &briefError{msg: msg, err: err}
	}
	var az *azcore.ResponseError
	if errors.As(err, &az) {
		return &briefError{msg: fmt.Sprintf("HTTP %d %s", az.StatusCode, az.ErrorCode), err: err}
	}
	var g *googleapi.Error
	if errors.As(err, &g) {
		msg := fmt.Sprintf("HTTP %d", g.Code)
		if g.Message != "" {
			msg += ": " + g.Message
		}
		return &briefError{msg: msg, err: err}
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return &briefError{msg: op.Error(), err: err}
	}
	return err
}

// notFound tells a missing bucket from a missing object, probing the
// bucket once per store.
func (s *bucketStore) notFound(ctx context.Context) error {
	if s.probe == nil || s.bucketKnown.Load() {
		return notFound(nil)
	}
	err := s.probe(ctx)
	if err != nil && (isBucketMissing(err) || httpStatus(err) == 404) {
		return bucketNotFound(s.name, nil)
	}
	if err == nil || !isTransient(err) {
		// It exists, or the probe is not allowed (object-level
		// permissions): stop asking either way.
		s.bucketKnown.Store(true)
	}
	return notFound(nil)
}

// httpStatus returns the HTTP status code carried by err, or 0.
func httpStatus(err error) int {
	var aws interface{ HTTPStatusCode() int }
	if errors.As(err, &aws) {
		return aws.HTTPStatusCode()
	}
	var g *googleapi.Error
	if errors.As(err, &g) {
		return g.Code
	}
	var az *azcore.ResponseError
	if errors.As(err, &az) {
		return az.StatusCode
	}
	return 0
}

// errorCode returns the service's error code (S3's "NoSuchBucket", Azure's
// "ContainerNotFound"), or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	var az *azcore.ResponseError
	if errors.As(err, &az) {
		return az.ErrorCode
	}
	return ""
}

func isBucketMissing(err error) bool {
	if errors.Is(err, storage.ErrBucketNotExist) {
		return true
	}
	switch errorCode(err) {
	case "NoSuchBucket", "ContainerNotFound":
		return true
	}
	var g *googleapi.Error
	return errors.As(err, &g) && g.Code == 404 && strings.Contains(strings.ToLower(g.Message), "bucket")
}

func isPermissionCode(err error) bool {
	switch errorCode(err) {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
		"InvalidToken", "AuthenticationFailed", "AuthorizationFailure", "AuthorizationPermissionMismatch":
		return true
	}
	return false
}

// isTransientCode reports service error codes that mean "try again" even
// though their HTTP status does not say so.
func isTransientCode(err error) bool {
	switch errorCode(err) {
	case "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling",
		"ThrottlingException", "RequestTimeTooSkewed", "ConditionalRequestConflict",
		"OperationTimedOut", "ServerBusy":
		return true
	}
	return false
}

// isTransient classifies err as a failure that may pass when tried again:
// HTTP 408, 429 and 5xx, throttling codes, timeouts, resets and cut
// connections.
func isTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	if status := httpStatus(err); status == 408 || status == 429 || status >= 500 {
		return true
	}
	if isTransientCode(err) {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.ResourceExhausted, gcerrors.DeadlineExceeded:
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE, syscall.ETIMEDOUT} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// A connection closed under the request (the server went away while
	// the body was being written): as a reset.
	if errors.Is(err, net.ErrClosed) {
		return true
	}
	// A server that closed the connection before answering.
	var ue *url.Error
	if errors.As(err, &ue) && (errors.Is(ue.Err, io.EOF) || ue.Err.Error() == errServerClosedIdle) {
		return true
	}
	return false
}

// errServerClosedIdle is the text of net/http's unexported error for a
// request sent on a kept-alive connection that the server had just closed
// (a restarted server, an idle timeout): the request never reached it, so
// it is as safe to try again as a refused connection. net/http retries it
// itself only for requests it can replay, which a PUT with a body read
// from a stream is not.
const errServerClosedIdle = "http: server closed idle connection"
