package objectio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// S3 is a Store on an S3-compatible object store (AWS S3, MinIO, versitygw,
// R2, ...) through aws-sdk-go-v2. Keys live under a fixed prefix of one
// bucket, so several clusters or tests can share a bucket.
//
// Every call runs under its own deadline (S3Config.RequestTimeout) and the
// SDK's standard retryer with jittered exponential backoff, bounded by
// S3Config.MaxAttempts. If-absent Puts rest on the server honouring
// "If-None-Match: *"; CheckConditionalCreate verifies that at startup.
type S3 struct {
	client         *s3.Client
	bucket         string
	prefix         string // "" or ends in "/"
	where          string // "s3://bucket/prefix at endpoint", for error messages
	requestTimeout time.Duration
}

var _ Store = (*S3)(nil)

// S3Config configures NewS3. Only Bucket is required.
type S3Config struct {
	// Bucket must exist; a missing one shows up as ErrBucketMissing.
	Bucket string
	// Prefix is prepended to every key; a trailing slash is added if
	// missing. Empty means the bucket root.
	Prefix string
	// Endpoint is the server's base URL, as in "http://127.0.0.1:9000".
	// Empty means AWS S3.
	Endpoint string
	// Region defaults to the AWS configuration's, else us-east-1.
	Region string
	// PathStyle addresses the bucket in the path (http://host/bucket/key)
	// rather than the host name, as MinIO and versitygw need.
	PathStyle bool
	// AccessKey and SecretKey are static credentials. When both are
	// empty, SLUICE_S3_ACCESS_KEY/SLUICE_S3_SECRET_KEY are used if set,
	// else the standard AWS chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
	// shared config files, instance roles...).
	AccessKey string
	SecretKey string
	// RequestTimeout bounds each Store call, retries included. Zero
	// means s3RequestTimeoutDefault.
	RequestTimeout time.Duration
	// MaxAttempts bounds the attempts of each S3 request, the first
	// included. Zero means s3AttemptMaxDefault.
	MaxAttempts int
	// Logger receives the SDK's warnings; nil means slog.Default().
	Logger *slog.Logger
}

const (
	s3RequestTimeoutDefault = 30 * time.Second
	s3AttemptMaxDefault     = 5
	// s3BackoffMax caps one retry delay, so that MaxAttempts attempts fit
	// comfortably in a RequestTimeout.
	s3BackoffMax = 2 * time.Second
	// s3DeleteBatchMax is S3's cap on keys per DeleteObjects request.
	s3DeleteBatchMax = 1000
	// s3IdleConnsPerHost keeps enough connections to one endpoint for the
	// concurrent puts of a flush and the loads of the segment cache.
	s3IdleConnsPerHost = 64
	// s3RangeRetryMax bounds how often Get re-reads after a 416 that a
	// concurrent overwrite made stale (see Get).
	s3RangeRetryMax = 3
	// s3ConditionalConflict is the code of AWS S3's 409 for a conditional
	// write that raced another request on the key. Nothing was written, so
	// it is safe to retry.
	s3ConditionalConflict = "ConditionalRequestConflict"

	envAccessKey = "SLUICE_S3_ACCESS_KEY"
	envSecretKey = "SLUICE_S3_SECRET_KEY"
)

// NewS3 returns a Store on cfg.Bucket. It does no I/O beyond loading the
// AWS configuration, so a wrong endpoint, bucket or credentials show up on
// the first call; run CheckConditionalCreate to find out at startup.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("objectio: s3 store needs a bucket")
	}
	prefix, err := normalizePrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.Endpoint != "" && !strings.HasPrefix(cfg.Endpoint, "http://") && !strings.HasPrefix(cfg.Endpoint, "https://") {
		return nil, fmt.Errorf("objectio: s3 endpoint %q needs a scheme, as in http://127.0.0.1:9000", cfg.Endpoint)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = s3RequestTimeoutDefault
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = s3AttemptMaxDefault
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	opts, err := s3LoadOptions(cfg, logger)
	if err != nil {
		return nil, err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objectio: s3 store: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		// Servers other than AWS ignore the region but the signature
		// needs one.
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.PathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		// A ranged GET has no whole-object checksum to validate, and the
		// SDK would log a WARN for every one.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "AWS S3 (" + awsCfg.Region + ")"
	}
	return &S3{
		client:         client,
		bucket:         cfg.Bucket,
		prefix:         prefix,
		where:          fmt.Sprintf("s3://%s/%s at %s", cfg.Bucket, prefix, endpoint),
		requestTimeout: cfg.RequestTimeout,
	}, nil
}

// s3LoadOptions turns cfg into the SDK's configuration options.
func s3LoadOptions(cfg S3Config, logger *slog.Logger) ([]func(*config.LoadOptions) error, error) {
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.MaxIdleConnsPerHost = s3IdleConnsPerHost
	})
	attemptMax := cfg.MaxAttempts
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithLogger(sdkLogger{logger}),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attemptMax
				o.MaxBackoff = s3BackoffMax
				// The client-wide retry token bucket would, after a burst
				// of failures (a server restart), fail later requests
				// without trying them at all. Each request is bounded by
				// MaxAttempts and a deadline already.
				o.RateLimiter = ratelimit.None
				o.Retryables = append(o.Retryables, retry.RetryableErrorCode{
					Codes: map[string]struct{}{s3ConditionalConflict: {}},
				})
			})
		}),
		// Only compute and check checksums where the API requires them:
		// MinIO, versitygw and gofakes3 differ in which of the newer
		// flexible checksums they accept.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	access, secret := cfg.AccessKey, cfg.SecretKey
	if access == "" && secret == "" {
		access, secret = os.Getenv(envAccessKey), os.Getenv(envSecretKey)
		if (access == "") != (secret == "") {
			return nil, fmt.Errorf("objectio: s3 store: set both %s and %s, or neither", envAccessKey, envSecretKey)
		}
	}
	if (access == "") != (secret == "") {
		return nil, errors.New("objectio: s3 store: give both an access key and a secret key, or neither")
	}
	if access != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(access, secret, "")))
	}
	return opts, nil
}

// normalizePrefix checks a store prefix and gives it a trailing slash.
func normalizePrefix(prefix string) (string, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	if err := validateKey(prefix); err != nil {
		return "", fmt.Errorf("objectio: s3 store prefix: %w", err)
	}
	return prefix + "/", nil
}

// String names the store for logs, without credentials.
func (s *S3) String() string { return s.where }

func (s *S3) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.requestTimeout)
}

// ReleasesData says the caller may reuse a Put's bytes once it returns: the
// request body is fenced (newFencedReader), so not even a retry the SDK has
// abandoned can read them later.
func (s *S3) ReleasesData() bool { return true }

// Put implements Store. An if-absent Put sends "If-None-Match: *"; the
// server answers 412 to all but one of racing creators.
func (s *S3) Put(ctx context.Context, key string, data []byte, opt PutOptions) error {
	if err := validateKey(key); err != nil {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	body := newFencedReader(data)
	defer body.fence()
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          body,
		ContentLength: aws.Int64(int64(len(data))),
	}
	if opt.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	var attempts attemptLog
	_, err := s.client.PutObject(ctx, in, attempts.record)
	if err == nil {
		return nil
	}
	if opt.IfAbsent && isPreconditionFailed(err) {
		if attempts.ambiguous != nil {
			return s.unknownOutcome(key, attempts.ambiguous)
		}
		return exists(key)
	}
	return s.fail(ctx, "put", key, err)
}

// unknownOutcome reports an if-absent Put whose retry found the key taken
// after an earlier attempt of the same Put failed in a way that leaves open
// whether it was applied (a timeout, a reset connection, a 5xx). The key may
// hold this Put's own data, so claiming ErrExists (someone else won) could
// be a lie. The caller resolves it by reading the object back, as the
// sequencer does after any failed append.
func (s *S3) unknownOutcome(key string, attemptErr error) error {
	return fmt.Errorf("objectio: s3 if-absent put of %q in %s: outcome unknown: an attempt failed (%v) "+
		"and may have created the object, and the retry found it existing; read it back to tell whose it is",
		key, s.where, attemptErr)
}

// Get implements Store.
//
// S3 cannot express an empty range, and answers a range that starts at or
// past the end with 416 InvalidRange, while Store's contract is that reading
// at exactly the end yields nothing and only past the end is an error. So a
// 416 is resolved with a HeadObject: if the offset is the size, the result
// is empty; if it is past it, ErrInvalidRange. If the object grew in
// between (a concurrent overwrite), the GET is tried again.
func (s *S3) Get(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return s.get(ctx, key, offset, length, nil)
}

// GetInto reads the whole object into buf when it fits (see
// objectio.GetInto): the response body is read straight into it.
func (s *S3) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	return s.get(ctx, key, 0, -1, buf)
}

// get reads a range of an object into buf's memory when it fits.
func (s *S3) get(ctx context.Context, key string, offset, length int64, buf []byte) ([]byte, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("%w: negative offset %d", ErrInvalidRange, offset)
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	for range s3RangeRetryMax {
		data, err := s.getRange(ctx, key, offset, length, buf)
		if !errors.Is(err, errRangeNotSatisfiable) {
			return data, err
		}
		size, err := s.size(ctx, key)
		if err != nil {
			return nil, err
		}
		if offset > size {
			return nil, fmt.Errorf("%w: offset %d in %q, an object of %d bytes", ErrInvalidRange, offset, key, size)
		}
		if offset == size {
			return []byte{}, nil
		}
	}
	return nil, fmt.Errorf("objectio: s3 get %q in %s: the object kept changing size under a ranged read", key, s.where)
}

// errRangeNotSatisfiable is internal: the GET got 416.
var errRangeNotSatisfiable = errors.New("objectio: s3 range not satisfiable")

// getRange does one GET into buf's memory when it fits. It returns
// errRangeNotSatisfiable for a 416.
func (s *S3) getRange(ctx context.Context, key string, offset, length int64, buf []byte) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)}
	want := length
	switch {
	case length == 0:
		// S3 has no empty range. Ask for the byte at offset, which tells
		// whether the key exists and the offset is in the object, and
		// drop it.
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset))
	case length < 0 || length > math.MaxInt64-offset:
		want = -1
		if offset > 0 {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
		}
	default:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if isRangeNotSatisfiable(err) {
			return nil, errRangeNotSatisfiable
		}
		return nil, s.fail(ctx, "get", key, err)
	}
	defer out.Body.Close()
	contentLength := int64(-1) // not announced
	if out.ContentLength != nil {
		contentLength = *out.ContentLength
	}
	data, err := readBody(out.Body, contentLength, buf)
	if err != nil {
		return nil, s.fail(ctx, "get", key, err)
	}
	if in.Range != nil && responseStatus(out.ResultMetadata) == http.StatusOK {
		// The server ignored the Range header and sent the whole object.
		start, n, err := clipRange(int64(len(data)), offset, want)
		if err != nil {
			return nil, err
		}
		data = data[start : start+n : start+n]
	} else if err := checkContentRange(aws.ToString(out.ContentRange), offset); err != nil {
		return nil, fmt.Errorf("objectio: s3 get %q in %s: %w", key, s.where, err)
	}
	if length == 0 {
		return []byte{}, nil
	}
	if want >= 0 && int64(len(data)) > want {
		return nil, fmt.Errorf("objectio: s3 get %q in %s: asked for %d bytes at %d, got %d", key, s.where, want, offset, len(data))
	}
	return data, nil
}

// responseStatus returns the HTTP status of a successful call, or 0.
func responseStatus(md middleware.Metadata) int {
	if resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok {
		return resp.StatusCode
	}
	return 0
}

// readBody reads a response body of the announced length (or -1 when not
// announced) into buf's memory when it fits, else in one allocation.
func readBody(body io.Reader, contentLength int64, buf []byte) ([]byte, error) {
	if contentLength < 0 {
		b := bytes.NewBuffer(buf[:0])
		_, err := b.ReadFrom(body)
		return b.Bytes(), err
	}
	data := into(buf, contentLength)
	if _, err := io.ReadFull(body, data); err != nil {
		return nil, fmt.Errorf("reading %d-byte body: %w", contentLength, err)
	}
	return data, nil
}

// checkContentRange checks that a 206's "bytes first-last/size" starts
// where we asked: a misplaced range would hand the fetch path the wrong
// records.
func checkContentRange(contentRange string, offset int64) error {
	if contentRange == "" {
		return nil
	}
	spec, ok := strings.CutPrefix(contentRange, "bytes ")
	first, _, ok2 := strings.Cut(spec, "-")
	got, err := strconv.ParseInt(first, 10, 64)
	if !ok || !ok2 || err != nil {
		return fmt.Errorf("unparsable Content-Range %q", contentRange)
	}
	if got != offset {
		return fmt.Errorf("asked for a range at %d, got Content-Range %q", offset, contentRange)
	}
	return nil
}

// size returns the object's size with a HeadObject.
func (s *S3) size(ctx context.Context, key string) (int64, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		return 0, s.fail(ctx, "head", key, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// List implements Store.
func (s *S3) List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if !prefixCanMatch(prefix) {
		return ListPage{}, nil
	}
	if max <= 0 || max > listMaxDefault {
		max = listMaxDefault
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.bucket),
		Prefix:  aws.String(s.prefix + prefix),
		MaxKeys: aws.Int32(int32(max)),
	}
	if startAfter != "" {
		in.StartAfter = aws.String(s.prefix + startAfter)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return ListPage{}, s.fail(ctx, "list", prefix, err)
	}
	page := ListPage{Objects: make([]ObjectInfo, 0, len(out.Contents)), Truncated: aws.ToBool(out.IsTruncated)}
	for _, o := range out.Contents {
		key, ok := strings.CutPrefix(aws.ToString(o.Key), s.prefix)
		if !ok {
			return ListPage{}, fmt.Errorf("objectio: s3 list %q in %s: server returned key %q outside the prefix", prefix, s.where, aws.ToString(o.Key))
		}
		page.Objects = append(page.Objects, ObjectInfo{Key: key, Size: aws.ToInt64(o.Size)})
	}
	return page, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		err = s.fail(ctx, "delete", key, err)
		if errors.Is(err, ErrNotFound) {
			return nil // S3 itself answers 204; some servers say 404
		}
		return err
	}
	return nil
}

// DeleteMany removes keys with DeleteObjects, up to 1000 per request; keys
// that do not exist are not an error. All keys are checked before anything
// is deleted. On failure some keys may have been deleted and others not.
func (s *S3) DeleteMany(ctx context.Context, keys []string) error {
	for _, key := range keys {
		if err := validateKey(key); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		n := min(len(keys), s3DeleteBatchMax)
		if err := s.deleteBatch(ctx, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// deleteBatchErrorMax bounds how many per-key failures an error lists.
const deleteBatchErrorMax = 5

func (s *S3) deleteBatch(ctx context.Context, keys []string) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, key := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(s.prefix + key)}
	}
	out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(s.bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return s.fail(ctx, "delete-many", keys[0], err)
	}
	var failed []string
	for _, e := range out.Errors {
		if aws.ToString(e.Code) == "NoSuchKey" {
			continue
		}
		failed = append(failed, fmt.Sprintf("%q: %s %s", strings.TrimPrefix(aws.ToString(e.Key), s.prefix), aws.ToString(e.Code), aws.ToString(e.Message)))
	}
	if len(failed) == 0 {
		return nil
	}
	failedCount, more := len(failed), ""
	if failedCount > deleteBatchErrorMax {
		more = fmt.Sprintf(" and %d more", failedCount-deleteBatchErrorMax)
		failed = failed[:deleteBatchErrorMax]
	}
	return fmt.Errorf("objectio: s3 delete of %d keys in %s: %d failed: %s%s", len(keys), s.where, failedCount, strings.Join(failed, "; "), more)
}
