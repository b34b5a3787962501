package objectio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/s3server"
	"github.com/sluicedb/sluice/objectio/storetest"
)

// s3Target is an S3 server under test. base names its bucket, endpoint and
// credentials; each store gets a fresh Prefix, so each sees an empty store.
type s3Target struct {
	base objectio.S3Config
	// checksCredentials is false for servers that accept any signature
	// (gofakes3).
	checksCredentials bool
	// url returns the store URL of a prefix, to test Open.
	url func(prefix string) string
}

var s3PrefixCount atomic.Int64

// newS3 returns a store on a fresh prefix of the target's bucket.
func (tg s3Target) newS3(t testing.TB) *objectio.S3 {
	t.Helper()
	cfg := tg.base
	cfg.Prefix = fmt.Sprintf("%s/p%d", s3server.RandomPrefix(), s3PrefixCount.Add(1))
	return newS3WithConfig(t, cfg)
}

func newS3WithConfig(t testing.TB, cfg objectio.S3Config) *objectio.S3 {
	t.Helper()
	s, err := objectio.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewS3(bucket %q, endpoint %q) = %v, want nil", cfg.Bucket, cfg.Endpoint, err)
	}
	return s
}

// runS3Suite runs the conformance suite and the S3-specific cases on one
// server.
func runS3Suite(t *testing.T, tg s3Target) {
	t.Run("Conformance", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) objectio.Store { return tg.newS3(t) })
	})
	t.Run("IfAbsentRaceBetweenTwoClientsHasOneWinner", func(t *testing.T) { testS3RaceTwoClients(t, tg) })
	t.Run("RangedReadsAtObjectBoundaries", func(t *testing.T) { testS3RangeBoundaries(t, tg.newS3(t)) })
	t.Run("CheckConditionalCreatePasses", func(t *testing.T) { testS3CheckPasses(t, tg.newS3(t)) })
	t.Run("MissingBucketIsErrBucketMissing", func(t *testing.T) { testS3MissingBucket(t, tg) })
	if tg.checksCredentials {
		t.Run("WrongCredentialsAreErrCredentials", func(t *testing.T) { testS3WrongCredentials(t, tg) })
	}
	t.Run("DeleteManyDeletesInBatches", func(t *testing.T) { testS3DeleteMany(t, tg.newS3(t)) })
	t.Run("RangedGetsLogNoChecksumWarnings", func(t *testing.T) { testS3NoChecksumWarnings(t, tg) })
	t.Run("OpenURLReachesTheBucket", func(t *testing.T) { testS3OpenURL(t, tg) })
}

// testS3RaceTwoClients races if-absent creates from two S3 clients, with
// their own connection pools, as two sequencers on two machines would.
func testS3RaceTwoClients(t *testing.T, tg s3Target) {
	cfg := tg.base
	cfg.Prefix = s3server.RandomPrefix()
	a, b := newS3WithConfig(t, cfg), newS3WithConfig(t, cfg)
	for round := range 8 {
		storetest.RaceIfAbsent(t, []objectio.Store{a, b}, b, fmt.Sprintf("meta/log/%020d", round), 16)
	}
}

// testS3RangeBoundaries reads at and around the ends of objects, where S3
// answers 416 and Store's contract differs (reading at the end is empty).
func testS3RangeBoundaries(t *testing.T, s *objectio.S3) {
	ctx := context.Background()
	data := []byte("0123456789")
	for key, content := range map[string][]byte{"ten": data, "one": data[:1], "empty": {}} {
		if err := s.Put(ctx, key, content, objectio.PutOptions{}); err != nil {
			t.Fatalf("Put(%q) = %v", key, err)
		}
	}
	ok := []struct {
		key            string
		offset, length int64
		want           []byte
	}{
		{"ten", 0, -1, data},
		{"ten", 0, 10, data},
		{"ten", 0, 11, data},
		{"ten", 9, 1, data[9:]},
		{"ten", 9, -1, data[9:]},
		{"ten", 9, 100, data[9:]},
		{"ten", 10, -1, []byte{}},
		{"ten", 10, 0, []byte{}},
		{"ten", 10, 1, []byte{}},
		{"ten", 5, 0, []byte{}},
		{"ten", 0, 0, []byte{}},
		{"one", 0, -1, data[:1]},
		{"one", 0, 1, data[:1]},
		{"one", 1, -1, []byte{}},
		{"one", 1, 5, []byte{}},
		{"empty", 0, -1, []byte{}},
		{"empty", 0, 0, []byte{}},
		{"empty", 0, 5, []byte{}},
	}
	for _, c := range ok {
		got, err := s.Get(ctx, c.key, c.offset, c.length)
		if err != nil || !bytes.Equal(got, c.want) || got == nil {
			t.Errorf("Get(%q, %d, %d) = %q, %v; want %q, nil", c.key, c.offset, c.length, got, err, c.want)
		}
	}
	bad := []struct {
		key            string
		offset, length int64
	}{
		{"ten", 11, -1}, {"ten", 11, 1}, {"ten", 11, 0}, {"one", 2, -1}, {"empty", 1, -1}, {"empty", 1, 0}, {"ten", -1, 1},
	}
	for _, c := range bad {
		got, err := s.Get(ctx, c.key, c.offset, c.length)
		if !errors.Is(err, objectio.ErrInvalidRange) {
			t.Errorf("Get(%q, %d, %d) = %q, %v; want ErrInvalidRange", c.key, c.offset, c.length, got, err)
		}
	}
	for _, c := range [][2]int64{{0, -1}, {10, -1}, {10, 0}, {0, 0}, {3, 2}} {
		if _, err := s.Get(ctx, "missing", c[0], c[1]); !errors.Is(err, objectio.ErrNotFound) {
			t.Errorf("Get(missing, %d, %d) = %v, want ErrNotFound", c[0], c[1], err)
		}
	}
}

func testS3CheckPasses(t *testing.T, s *objectio.S3) {
	if err := objectio.CheckConditionalCreate(context.Background(), s); err != nil {
		t.Fatalf("CheckConditionalCreate = %v, want nil", err)
	}
	left, err := objectio.ListAll(context.Background(), s, "")
	if err != nil || len(left) != 0 {
		t.Fatalf("after CheckConditionalCreate the store holds %v (err %v), want nothing: the probe must be deleted", left, err)
	}
}

func testS3MissingBucket(t *testing.T, tg s3Target) {
	cfg := tg.base
	cfg.Bucket = "sluice-no-such-bucket-" + strings.ToLower(s3server.RandomPrefix())
	s := newS3WithConfig(t, cfg)
	ctx := context.Background()
	calls := map[string]error{
		"Put":         s.Put(ctx, "k", []byte("x"), objectio.PutOptions{}),
		"PutIfAbsent": s.Put(ctx, "k", []byte("x"), objectio.PutOptions{IfAbsent: true}),
		"List":        func() error { _, err := s.List(ctx, "", "", 0); return err }(),
		"Get":         func() error { _, err := s.Get(ctx, "k", 0, -1); return err }(),
		"Check":       objectio.CheckConditionalCreate(ctx, s),
	}
	for name, err := range calls {
		if !errors.Is(err, objectio.ErrBucketMissing) {
			t.Errorf("%s on a missing bucket = %v, want ErrBucketMissing", name, err)
			continue
		}
		if !strings.Contains(err.Error(), cfg.Bucket) {
			t.Errorf("%s on a missing bucket = %q, want the bucket name in the message", name, err)
		}
	}
}

func testS3WrongCredentials(t *testing.T, tg s3Target) {
	ctx := context.Background()
	for _, c := range []struct{ name, access, secret string }{
		{"UnknownAccessKey", "nosuchkey", "whatever-secret"},
		{"WrongSecretKey", tg.base.AccessKey, "wrong-secret-key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tg.base
			cfg.AccessKey, cfg.SecretKey = c.access, c.secret
			cfg.Prefix = s3server.RandomPrefix()
			s := newS3WithConfig(t, cfg)
			calls := map[string]error{
				"Put":   s.Put(ctx, "k", []byte("x"), objectio.PutOptions{IfAbsent: true}),
				"List":  func() error { _, err := s.List(ctx, "", "", 0); return err }(),
				"Get":   func() error { _, err := s.Get(ctx, "k", 0, -1); return err }(),
				"Check": objectio.CheckConditionalCreate(ctx, s),
			}
			for name, err := range calls {
				if !errors.Is(err, objectio.ErrCredentials) {
					t.Errorf("%s with wrong credentials = %v, want ErrCredentials", name, err)
				}
				if errors.Is(err, objectio.ErrBucketMissing) || errors.Is(err, objectio.ErrNotFound) {
					t.Errorf("%s with wrong credentials = %v, which also claims a missing bucket or key", name, err)
				}
			}
		})
	}
}

func testS3DeleteMany(t *testing.T, s *objectio.S3) {
	ctx := context.Background()
	const keyCount = 2100 // three DeleteObjects batches
	keys := make([]string, keyCount)
	for i := range keys {
		keys[i] = fmt.Sprintf("data/%06d", i)
	}
	putParallel(t, s, keys[:keyCount-5]) // the last 5 never exist
	if err := s.Put(ctx, "keep", []byte("x"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMany(ctx, keys); err != nil {
		t.Fatalf("DeleteMany(%d keys) = %v, want nil", keyCount, err)
	}
	left, err := objectio.ListAll(ctx, s, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Key != "keep" {
		t.Fatalf("after DeleteMany the store lists %d objects (first %v), want only keep", len(left), left[:min(len(left), 3)])
	}
	if err := s.DeleteMany(ctx, []string{"ok", "../bad"}); !errors.Is(err, objectio.ErrInvalidKey) {
		t.Fatalf("DeleteMany with an invalid key = %v, want ErrInvalidKey", err)
	}
	if err := s.DeleteMany(ctx, nil); err != nil {
		t.Fatalf("DeleteMany(nil) = %v, want nil", err)
	}
}

func putParallel(t *testing.T, s objectio.Store, keys []string) {
	t.Helper()
	const writerCount = 16
	var wg sync.WaitGroup
	errs := make(chan error, writerCount)
	for w := range writerCount {
		wg.Go(func() {
			for i := w; i < len(keys); i += writerCount {
				if err := s.Put(context.Background(), keys[i], []byte(keys[i]), objectio.PutOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// logCapture is a slog handler that keeps every record's message.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (c *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (c *logCapture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (c *logCapture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCapture) WithGroup(string) slog.Handler      { return c }

func testS3NoChecksumWarnings(t *testing.T, tg s3Target) {
	capture := &logCapture{}
	cfg := tg.base
	cfg.Prefix = s3server.RandomPrefix()
	cfg.Logger = slog.New(capture)
	s := newS3WithConfig(t, cfg)
	ctx := context.Background()
	data := bytes.Repeat([]byte("checksum"), 1024)
	if err := s.Put(ctx, "obj", data, objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{0, -1}, {0, 10}, {100, 1000}, {int64(len(data)) - 1, -1}, {int64(len(data)), -1}} {
		if _, err := s.Get(ctx, "obj", r[0], r[1]); err != nil {
			t.Fatalf("Get(obj, %d, %d) = %v", r[0], r[1], err)
		}
	}
	capture.mu.Lock()
	defer capture.mu.Unlock()
	for _, m := range capture.msgs {
		if strings.Contains(strings.ToLower(m), "checksum") || strings.HasPrefix(m, "WARN") {
			t.Errorf("the SDK logged %q during ranged GETs; want no checksum warnings", m)
		}
	}
}

func testS3OpenURL(t *testing.T, tg s3Target) {
	prefix := s3server.RandomPrefix()
	st, err := objectio.Open(tg.url(prefix))
	if err != nil {
		t.Fatalf("Open(%s) = %v, want nil", objectio.RedactStoreURL(tg.url(prefix)), err)
	}
	if _, ok := st.(*objectio.S3); !ok {
		t.Fatalf("Open(s3://...) = %T, want *objectio.S3", st)
	}
	ctx := context.Background()
	if err := st.Put(ctx, "via/url", []byte("hello"), objectio.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("Put through an opened URL = %v", err)
	}
	// The same object is under the prefix for a store made from the config.
	cfg := tg.base
	cfg.Prefix = prefix
	direct := newS3WithConfig(t, cfg)
	got, err := direct.Get(ctx, "via/url", 0, -1)
	if err != nil || string(got) != "hello" {
		t.Fatalf("Get through NewS3 on the same prefix = %q, %v; want hello", got, err)
	}
}
