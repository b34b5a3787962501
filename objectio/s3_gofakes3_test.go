package objectio_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/storetest"
)

// These tests run the S3 backend against gofakes3, in process, so they need
// no server binary.
//
// gofakes3 v1.2.0 honours "If-None-Match: *" on PutObject (s3mem checks and
// writes under one lock), so the if-absent cases run on it unpatched. It
// does not check signatures, so the wrong-credentials case runs only on
// MinIO and versitygw.
//
// One gofakes3 bug needs a test-only shim, fixListTruncation: s3mem marks a
// listing truncated whenever any key follows the last one returned, even a
// key outside the requested prefix, where S3 (and MinIO and versitygw) only
// count keys that match. Without the shim, the conformance case
// ListPagesWithMaxAndTruncated fails on gofakes3 alone. The backend itself
// takes IsTruncated as the server reports it.

const fakeBucket = "sluice-fake"

// fakeS3 is an in-process gofakes3 server.
type fakeS3 struct {
	endpoint string
	backend  *s3mem.Backend
}

// newFakeS3 starts gofakes3 with the bucket fakeBucket. wrap, if not nil,
// wraps its handler, to inject server behaviour.
func newFakeS3(t testing.TB, wrap func(http.Handler) http.Handler) *fakeS3 {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(fakeBucket); err != nil {
		t.Fatal(err)
	}
	h := fixListTruncation(gofakes3.New(backend).Server())
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &fakeS3{endpoint: srv.URL, backend: backend}
}

func (f *fakeS3) config(prefix string) objectio.S3Config {
	return objectio.S3Config{
		Bucket:    fakeBucket,
		Prefix:    prefix,
		Endpoint:  f.endpoint,
		Region:    "us-east-1",
		PathStyle: true,
		AccessKey: "fake-access",
		SecretKey: "fake-secret",
	}
}

func (f *fakeS3) target() s3Target {
	return s3Target{
		base: f.config(""),
		url: func(prefix string) string {
			return "s3://" + fakeBucket + "/" + prefix + "?endpoint=" + url.QueryEscape(f.endpoint) +
				"&region=us-east-1&path_style=true&access_key=fake-access&secret_key=fake-secret"
		},
	}
}

func TestS3OnGofakes3(t *testing.T) {
	runS3Suite(t, newFakeS3(t, nil).target())
}

// TestS3OnGofakes3ConformsAtTheBucketRoot runs the suite with no store
// prefix, each case on a fresh bucket.
func TestS3OnGofakes3ConformsAtTheBucketRoot(t *testing.T) {
	fake := newFakeS3(t, nil)
	var bucketCount atomic.Int64
	storetest.Run(t, func(t *testing.T) objectio.Store {
		cfg := fake.config("")
		cfg.Bucket = fmt.Sprintf("root-%d", bucketCount.Add(1))
		if err := fake.backend.CreateBucket(cfg.Bucket); err != nil {
			t.Fatal(err)
		}
		return newS3WithConfig(t, cfg)
	})
}

// s3ErrorReply writes an S3 error document.
func s3ErrorReply(w http.ResponseWriter, status int, code string) {
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>injected by the test</Message><RequestId>test</RequestId></Error>`, code)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// conditionalPuts calls reply for every PUT with If-None-Match; reply
// returns false to pass the request on to gofakes3.
func conditionalPuts(reply func(w http.ResponseWriter, r *http.Request, n int) bool) func(http.Handler) http.Handler {
	var count atomic.Int64
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" {
				if reply(w, r, int(count.Add(1))) {
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestS3RetriesConditionalRequestConflict(t *testing.T) {
	// AWS S3 answers 409 ConditionalRequestConflict to a conditional write
	// racing another request on the key; nothing was written.
	fake := newFakeS3(t, conditionalPuts(func(w http.ResponseWriter, _ *http.Request, n int) bool {
		if n <= 2 {
			s3ErrorReply(w, http.StatusConflict, "ConditionalRequestConflict")
			return true
		}
		return false
	}))
	s := newS3WithConfig(t, fake.config("c"))
	ctx := context.Background()
	if err := s.Put(ctx, "meta/log/1", []byte("entry"), objectio.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("if-absent Put after two 409s = %v, want nil (409 is retried)", err)
	}
	if err := s.Put(ctx, "meta/log/1", []byte("other"), objectio.PutOptions{IfAbsent: true}); !errors.Is(err, objectio.ErrExists) {
		t.Fatalf("second if-absent Put = %v, want ErrExists", err)
	}
}

func TestS3PersistentConflictFailsAfterMaxAttempts(t *testing.T) {
	var attempts atomic.Int64
	fake := newFakeS3(t, conditionalPuts(func(w http.ResponseWriter, _ *http.Request, _ int) bool {
		attempts.Add(1)
		s3ErrorReply(w, http.StatusConflict, "ConditionalRequestConflict")
		return true
	}))
	cfg := fake.config("c")
	cfg.MaxAttempts = 3
	s := newS3WithConfig(t, cfg)
	err := s.Put(context.Background(), "meta/log/1", []byte("entry"), objectio.PutOptions{IfAbsent: true})
	if err == nil || errors.Is(err, objectio.ErrExists) {
		t.Fatalf("if-absent Put under persistent 409s = %v, want an error that is not ErrExists", err)
	}
	if !strings.Contains(err.Error(), "ConditionalRequestConflict") {
		t.Errorf("error = %q, want it to name ConditionalRequestConflict", err)
	}
	if got := attempts.Load(); got != 3 {
		t.Errorf("server saw %d attempts, want MaxAttempts = 3", got)
	}
}

// TestS3IfAbsentRetryAfterLostResponseIsNotExists: the first attempt
// creates the object but its answer is a 500; the SDK retries and gets
// 412. The key holds this Put's own data, so ErrExists ("someone else
// won") would be false; the caller must read back instead.
func TestS3IfAbsentRetryAfterLostResponseIsNotExists(t *testing.T) {
	var once sync.Once
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first := false
			if r.Method == http.MethodPut && r.Header.Get("If-None-Match") != "" {
				once.Do(func() { first = true })
			}
			if !first {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			// Applied, but reported failed.
			next.ServeHTTP(rec, r)
			s3ErrorReply(w, http.StatusInternalServerError, "InternalError")
		})
	}
	fake := newFakeS3(t, wrap)
	s := newS3WithConfig(t, fake.config("c"))
	ctx := context.Background()
	err := s.Put(ctx, "meta/log/7", []byte("mine"), objectio.PutOptions{IfAbsent: true})
	if err == nil || errors.Is(err, objectio.ErrExists) {
		t.Fatalf("if-absent Put whose applied first attempt reported 500 = %v; want an outcome-unknown error, not nil or ErrExists", err)
	}
	if !strings.Contains(err.Error(), "outcome unknown") {
		t.Errorf("error = %q, want it to say the outcome is unknown", err)
	}
	got, err := s.Get(ctx, "meta/log/7", 0, -1)
	if err != nil || string(got) != "mine" {
		t.Fatalf("read-back = %q, %v; want mine", got, err)
	}
}

// TestS3PutRetriedAfter500StoresTheWholeBody: the SDK retries a 5xx, and
// the retry must send the body again from its start.
func TestS3PutRetriedAfter500StoresTheWholeBody(t *testing.T) {
	var puts atomic.Int64
	fake := newFakeS3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && puts.Add(1) == 1 {
				io.Copy(io.Discard, r.Body) // not applied
				s3ErrorReply(w, http.StatusServiceUnavailable, "ServiceUnavailable")
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	s := newS3WithConfig(t, fake.config("r"))
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
	ctx := context.Background()
	if err := s.Put(ctx, "data/1", data, objectio.PutOptions{}); err != nil {
		t.Fatalf("Put after one 503 = %v, want nil (retried)", err)
	}
	got, err := s.Get(ctx, "data/1", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after the retried Put = %d bytes, %v; want the %d bytes put", len(got), err, len(data))
	}
	if n := puts.Load(); n != 2 {
		t.Errorf("server saw %d PUTs, want 2", n)
	}
}

// TestS3ServerIgnoringRangeStillReadsTheRange: a server may answer a
// ranged GET with 200 and the whole object; Get must still return the
// range.
func TestS3ServerIgnoringRangeStillReadsTheRange(t *testing.T) {
	fake := newFakeS3(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Range")
			next.ServeHTTP(w, r)
		})
	})
	s := newS3WithConfig(t, fake.config(""))
	ctx := context.Background()
	data := []byte("0123456789")
	if err := s.Put(ctx, "r", data, objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		offset, length int64
		want           []byte
	}{{2, 3, data[2:5]}, {8, 100, data[8:]}, {10, 1, []byte{}}, {4, -1, data[4:]}, {0, 0, []byte{}}}
	for _, c := range cases {
		got, err := s.Get(ctx, "r", c.offset, c.length)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("Get(r, %d, %d) = %q, %v; want %q", c.offset, c.length, got, err, c.want)
		}
	}
	if _, err := s.Get(ctx, "r", 11, 1); !errors.Is(err, objectio.ErrInvalidRange) {
		t.Errorf("Get(r, 11, 1) = %v, want ErrInvalidRange", err)
	}
}

// listResult is the part of a ListObjectsV2 answer fixListTruncation reads.
type listResult struct {
	IsTruncated bool
	Contents    []struct{ Key string }
}

// fixListTruncation corrects gofakes3's IsTruncated on ListObjectsV2 (see
// the top of this file): when gofakes3 says "truncated", it asks gofakes3
// for one key after the last one returned, under the same prefix, and
// clears the flag when there is none.
func fixListTruncation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		if r.Method != http.MethodGet || query.Get("list-type") != "2" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var res listResult
		if rec.Code == http.StatusOK && xml.Unmarshal(body, &res) == nil && res.IsTruncated && len(res.Contents) > 0 {
			query.Del("continuation-token")
			query.Set("start-after", res.Contents[len(res.Contents)-1].Key)
			query.Set("max-keys", "1")
			probe := httptest.NewRequest(http.MethodGet, r.URL.Path+"?"+query.Encode(), nil)
			probeRec := httptest.NewRecorder()
			next.ServeHTTP(probeRec, probe)
			var more listResult
			if probeRec.Code == http.StatusOK && xml.Unmarshal(probeRec.Body.Bytes(), &more) == nil && len(more.Contents) == 0 {
				body = bytes.Replace(body, []byte("<IsTruncated>true</IsTruncated>"), []byte("<IsTruncated>false</IsTruncated>"), 1)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		w.Write(body)
	})
}
