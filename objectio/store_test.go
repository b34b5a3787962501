package objectio_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

func TestOpenMemReturnsAFreshMem(t *testing.T) {
	a, err := objectio.Open("mem://")
	if err != nil {
		t.Fatalf(`Open("mem://") = %v, want nil`, err)
	}
	if _, ok := a.(*objectio.Mem); !ok {
		t.Fatalf(`Open("mem://") = %T, want *objectio.Mem`, a)
	}
	b, _ := objectio.Open("mem://")
	if err := a.Put(context.Background(), "k", []byte("x"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(context.Background(), "k", 0, -1); !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("a second mem:// store sees the first one's object: Get = %v, want ErrNotFound", err)
	}
}

func TestOpenDirCreatesTheDirectory(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "abs", "store")
	t.Chdir(t.TempDir())
	cases := []struct{ url, dir string }{
		{"dir://" + abs, abs},
		{"dir://./rel/path", "rel/path"},
		{"dir://plain", "plain"},
	}
	for _, c := range cases {
		s, err := objectio.Open(c.url)
		if err != nil {
			t.Fatalf("Open(%q) = %v, want nil", c.url, err)
		}
		d, ok := s.(*objectio.Dir)
		if !ok {
			t.Fatalf("Open(%q) = %T, want *objectio.Dir", c.url, s)
		}
		wantRoot, _ := filepath.Abs(c.dir)
		if d.Root() != wantRoot {
			t.Errorf("Open(%q).Root() = %q, want %q", c.url, d.Root(), wantRoot)
		}
		if fi, err := os.Stat(c.dir); err != nil || !fi.IsDir() {
			t.Errorf("Open(%q) did not create directory %q: %v", c.url, c.dir, err)
		}
	}
}

func TestOpenRejectsBadURLsClearly(t *testing.T) {
	cases := []struct{ url, wantInError string }{
		{"s3://", "needs a bucket"},
		{"s3://bucket/prefix?bogus=1", `unknown parameter "bogus"`},
		{"ftp://host/x", `unknown scheme "ftp"`},
		{"/just/a/path", "no scheme"},
		{"dir://", "needs a path"},
		{"mem://name", "takes no path"},
	}
	for _, c := range cases {
		s, err := objectio.Open(c.url)
		if err == nil {
			t.Errorf("Open(%q) = %T, nil; want an error", c.url, s)
			continue
		}
		if !strings.Contains(err.Error(), c.wantInError) {
			t.Errorf("Open(%q) = %q, want an error mentioning %q", c.url, err, c.wantInError)
		}
	}
}

// truncatedEmptyStore is a broken Store whose List claims more pages but
// returns no keys; ListAll must not loop forever on it.
type truncatedEmptyStore struct{ objectio.Store }

func (truncatedEmptyStore) List(context.Context, string, string, int) (objectio.ListPage, error) {
	return objectio.ListPage{Truncated: true}, nil
}

func TestListAllFailsOnEmptyTruncatedPage(t *testing.T) {
	_, err := objectio.ListAll(context.Background(), truncatedEmptyStore{objectio.NewMem()}, "")
	if err == nil {
		t.Fatal("ListAll over an empty truncated page = nil error, want an error")
	}
}
