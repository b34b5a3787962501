package objectio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Configuration errors of a remote store. They are not retried: an operator
// has to fix the store URL or the credentials. Compare with errors.Is.
var (
	// ErrBucketMissing means the bucket named in the store URL does not
	// exist.
	ErrBucketMissing = errors.New("objectio: bucket does not exist")
	// ErrCredentials means the store rejected the credentials (unknown
	// access key, wrong secret key, expired token) or denied access.
	ErrCredentials = errors.New("objectio: credentials rejected or access denied")
)

// credentialCodes are the S3 error codes of rejected credentials. They are
// checked before the HTTP status, because some are not 403s: versitygw
// answers an unknown access key with 404 XAdminUserNotFound, which must
// not pass for a missing object.
var credentialCodes = map[string]bool{
	"InvalidAccessKeyId":    true,
	"SignatureDoesNotMatch": true,
	"AccessDenied":          true,
	"InvalidToken":          true,
	"ExpiredToken":          true,
	"TokenRefreshRequired":  true,
	"InvalidSecurity":       true,
	"XAdminUserNotFound":    true, // versitygw: unknown access key
}

// apiError returns the S3 error code, message and HTTP status in err, where
// present.
func apiError(err error) (code, message string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, message = ae.ErrorCode(), ae.ErrorMessage()
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, message, status
}

// fail turns an SDK error from operation op on key into the objectio error
// callers branch on, with the store named in the message.
func (s *S3) fail(ctx context.Context, op, key string, err error) error {
	code, message, status := apiError(err)
	switch {
	case code == "NoSuchBucket":
		return fmt.Errorf("%w: %s %q: bucket %q does not exist (%s); create it or fix the bucket in the store URL",
			ErrBucketMissing, op, key, s.bucket, s.where)
	case credentialCodes[code] || status == http.StatusForbidden:
		if code == "" {
			code, message = "HTTP 403", "Forbidden"
		}
		return fmt.Errorf("%w: %s %q in %s: %s: %s; check the access key and secret key (store URL access_key/secret_key, %s/%s or the AWS credential chain) and the bucket policy",
			ErrCredentials, op, key, s.where, code, message, envAccessKey, envSecretKey)
	case (code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound) && (op == "get" || op == "head" || op == "delete"):
		return notFound(key)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("objectio: s3 %s %q in %s: no answer within the request timeout of %v: %w", op, key, s.where, s.requestTimeout, err)
	}
	return fmt.Errorf("objectio: s3 %s %q in %s: %w", op, key, s.where, err)
}

func isPreconditionFailed(err error) bool {
	code, _, status := apiError(err)
	return code == "PreconditionFailed" || status == http.StatusPreconditionFailed
}

func isRangeNotSatisfiable(err error) bool {
	code, _, status := apiError(err)
	return code == "InvalidRange" || status == http.StatusRequestedRangeNotSatisfiable
}

// attemptLog watches the attempts of one SDK call for a failure that leaves
// open whether the request was applied. Attempts run one after another in
// the caller's goroutine, so it needs no lock.
type attemptLog struct {
	// ambiguous is the first attempt error that was not a definite
	// rejection, or nil.
	ambiguous error
}

// record is a per-call SDK option that puts the watcher inside the retry
// loop, where it sees every attempt's outcome.
func (a *attemptLog) record(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("SluiceAttemptLog",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if err != nil && a.ambiguous == nil && !definitelyRejected(err) {
					a.ambiguous = err
				}
				return out, md, err
			}), "Retry", middleware.After)
	})
}

// definitelyRejected reports an error that proves the server did not apply
// the request: a 4xx answer. A transport error or a 5xx proves nothing; the
// request may have been applied and the answer lost.
func definitelyRejected(err error) bool {
	_, _, status := apiError(err)
	return status >= 400 && status < 500
}

// errFenced is what the HTTP transport reads from a Put body once Put has
// returned.
var errFenced = errors.New("objectio: put body read after the put returned")

// fencedReader serves a Put's data to the HTTP transport until fence is
// called. The transport may read a request body after the call returned:
// http.RoundTripper's contract lets it close (and so read) the body "in a
// separate goroutine even after RoundTrip returns", and Go's transport
// goes on writing the body briefly when the server answers early (a 412
// before the body is in) or the call is canceled. Callers reuse their
// buffer as soon as Put returns (pooled produce buffers), so without the
// fence a late read could send bytes of the next batch. After fence, reads
// fail and the transport drops the connection, so the server never gets a
// whole request made of mixed bytes. This avoids copying every data object.
type fencedReader struct {
	mu     sync.Mutex
	r      bytes.Reader // guarded by mu
	fenced bool         // guarded by mu
}

func newFencedReader(data []byte) *fencedReader {
	f := &fencedReader{}
	f.r.Reset(data)
	return f
}

func (f *fencedReader) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fenced {
		return 0, errFenced
	}
	return f.r.Read(p)
}

// Seek lets the SDK hash the payload and rewind it for a retry.
func (f *fencedReader) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fenced {
		return 0, errFenced
	}
	return f.r.Seek(offset, whence)
}

// fence ends all access to the data. It waits for a Read in progress.
func (f *fencedReader) fence() {
	f.mu.Lock()
	f.fenced = true
	f.mu.Unlock()
}

// sdkLogger sends the SDK's log lines to slog.
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	s.l.Log(context.Background(), level, "s3 sdk: "+fmt.Sprintf(format, v...))
}
