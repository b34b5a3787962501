package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

func testPutGetRoundTrip(t *testing.T, s objectio.Store) {
	data := []byte("batch bytes\x00with a NUL and \xff high bytes")
	mustPut(t, s, "data/00000000000000000001-abc", data, objectio.PutOptions{})
	wantContent(t, s, "data/00000000000000000001-abc", data)
}

func testEmptyObject(t *testing.T, s objectio.Store) {
	mustPut(t, s, "empty", nil, objectio.PutOptions{})
	wantContent(t, s, "empty", []byte{})
	page := mustList(t, s, "", "", 0)
	if len(page.Objects) != 1 || page.Objects[0].Size != 0 {
		t.Fatalf("List after putting one empty object = %+v, want one object of size 0", page.Objects)
	}
}

func testLargeObject(t *testing.T, s objectio.Store) {
	data := pattern(7, 5<<20+3)
	mustPut(t, s, "data/large", data, objectio.PutOptions{})
	wantContent(t, s, "data/large", data)
	got := mustGet(t, s, "data/large", 3<<20, 1<<20)
	if !bytes.Equal(got, data[3<<20:4<<20]) {
		t.Fatalf("Get(large, 3 MiB, 1 MiB) = %s, want %s", describe(got), describe(data[3<<20:4<<20]))
	}
}

// testUnusualKeyCharacters covers characters that S3 clients must escape in
// URLs and signatures; a backend that mangles them loses objects.
func testUnusualKeyCharacters(t *testing.T, s objectio.Store) {
	keys := []string{"odd/a b", "odd/a+b", "odd/a=b&c", "odd/%20", "odd/é-ü", "odd/~!$'()*,;@"}
	for i, k := range keys {
		mustPut(t, s, k, pattern(i, 10), objectio.PutOptions{})
	}
	for i, k := range keys {
		wantContent(t, s, k, pattern(i, 10))
	}
	want := []string{"odd/%20", "odd/a b", "odd/a+b", "odd/a=b&c", "odd/~!$'()*,;@", "odd/é-ü"}
	wantKeys(t, "List(odd/)", mustList(t, s, "odd/", "", 0).Objects, want)
}

func testRangedGet(t *testing.T, s objectio.Store) {
	data := pattern(1, 100)
	mustPut(t, s, "r", data, objectio.PutOptions{})
	cases := []struct {
		offset, length int64
		want           []byte
	}{
		{10, 20, data[10:30]},  // middle
		{80, 20, data[80:100]}, // exactly to the end
		{90, -1, data[90:]},    // length -1: to the end
		{0, -1, data},          // whole object
		{0, 0, []byte{}},       // nothing
		{0, 1, data[:1]},       // first byte
		{99, 1, data[99:]},     // last byte
	}
	for _, c := range cases {
		got := mustGet(t, s, "r", c.offset, c.length)
		if !bytes.Equal(got, c.want) {
			t.Errorf("Get(r, %d, %d) = %s, want %s", c.offset, c.length, describe(got), describe(c.want))
		}
	}
}

func testRangedGetClipped(t *testing.T, s objectio.Store) {
	data := pattern(2, 100)
	mustPut(t, s, "r", data, objectio.PutOptions{})
	cases := []struct {
		offset, length int64
		want           []byte
	}{
		{95, 10, data[95:]},      // runs past the end
		{0, 1000, data},          // longer than the object
		{100, 5, []byte{}},       // starts at the end
		{100, -1, []byte{}},      // the rest, when nothing is left
		{50, 1 << 40, data[50:]}, // absurd length must not allocate it
	}
	for _, c := range cases {
		got := mustGet(t, s, "r", c.offset, c.length)
		if !bytes.Equal(got, c.want) {
			t.Errorf("Get(r, %d, %d) = %s, want %s", c.offset, c.length, describe(got), describe(c.want))
		}
	}
}

func testRangedGetBadOffset(t *testing.T, s objectio.Store) {
	mustPut(t, s, "r", pattern(3, 100), objectio.PutOptions{})
	for _, offset := range []int64{101, 1000, -1} {
		data, err := s.Get(context.Background(), "r", offset, 1)
		if err == nil {
			t.Errorf("Get(r, %d, 1) on a 100-byte object = %s, nil; want an error", offset, describe(data))
		}
		if errors.Is(err, objectio.ErrNotFound) {
			t.Errorf("Get(r, %d, 1) = %v; want a range error, the object exists", offset, err)
		}
	}
}

func testGetMissing(t *testing.T, s objectio.Store) {
	wantNotFound(t, s, "data/missing")
	mustPut(t, s, "data/present", []byte("x"), objectio.PutOptions{})
	wantNotFound(t, s, "data/missing")
	wantNotFound(t, s, "data/presen") // a prefix of a key is not a key
	if _, err := s.Get(context.Background(), "data/missing", 5, 10); !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("ranged Get of a missing key = %v, want ErrNotFound", err)
	}
}

func testOverwrite(t *testing.T, s objectio.Store) {
	mustPut(t, s, "k", []byte("first version, longer"), objectio.PutOptions{})
	mustPut(t, s, "k", []byte("second"), objectio.PutOptions{})
	wantContent(t, s, "k", []byte("second"))
	page := mustList(t, s, "", "", 0)
	if len(page.Objects) != 1 || page.Objects[0].Size != int64(len("second")) {
		t.Fatalf("List after overwrite = %+v, want one object of size %d", page.Objects, len("second"))
	}
}

func testIfAbsentExisting(t *testing.T, s objectio.Store) {
	key := "meta/log/00000000000000000042"
	mustPut(t, s, key, []byte("epoch entry of sequencer A"), objectio.PutOptions{IfAbsent: true})
	err := s.Put(context.Background(), key, []byte("sequencer B"), objectio.PutOptions{IfAbsent: true})
	if !errors.Is(err, objectio.ErrExists) {
		t.Fatalf("second IfAbsent Put = %v, want ErrExists", err)
	}
	wantContent(t, s, key, []byte("epoch entry of sequencer A"))
}

func testIfAbsentNew(t *testing.T, s objectio.Store) {
	mustPut(t, s, "meta/log/00000000000000000001", []byte("one"), objectio.PutOptions{IfAbsent: true})
	mustPut(t, s, "meta/log/00000000000000000002", []byte("two"), objectio.PutOptions{IfAbsent: true})
	wantContent(t, s, "meta/log/00000000000000000001", []byte("one"))
	wantContent(t, s, "meta/log/00000000000000000002", []byte("two"))
}

func testIfAbsentAfterDelete(t *testing.T, s objectio.Store) {
	mustPut(t, s, "k", []byte("old"), objectio.PutOptions{IfAbsent: true})
	if err := s.Delete(context.Background(), "k"); err != nil {
		t.Fatalf("Delete(k) = %v, want nil", err)
	}
	mustPut(t, s, "k", []byte("new"), objectio.PutOptions{IfAbsent: true})
	wantContent(t, s, "k", []byte("new"))
}

func testDeleteThenGet(t *testing.T, s objectio.Store) {
	mustPut(t, s, "data/a/b/c", []byte("x"), objectio.PutOptions{})
	mustPut(t, s, "data/a/d", []byte("y"), objectio.PutOptions{})
	if err := s.Delete(context.Background(), "data/a/b/c"); err != nil {
		t.Fatalf("Delete = %v, want nil", err)
	}
	wantNotFound(t, s, "data/a/b/c")
	wantContent(t, s, "data/a/d", []byte("y"))
	wantKeys(t, "List after delete", mustList(t, s, "", "", 0).Objects, []string{"data/a/d"})
}

func testDeleteMissing(t *testing.T, s objectio.Store) {
	if err := s.Delete(context.Background(), "never/existed"); err != nil {
		t.Fatalf("Delete of a missing key = %v, want nil", err)
	}
	mustPut(t, s, "k", []byte("x"), objectio.PutOptions{})
	for i := range 2 {
		if err := s.Delete(context.Background(), "k"); err != nil {
			t.Fatalf("Delete #%d of k = %v, want nil", i+1, err)
		}
	}
}

// testAppendToGet: the bytes a Get returns may be the stored ones (the
// Store contract forbids writing into them), but appending to them must not
// reach the stored object or a neighbouring range.
func testAppendToGet(t *testing.T, s objectio.Store) {
	mustPut(t, s, "k", []byte("original content"), objectio.PutOptions{})
	part := mustGet(t, s, "k", 0, 4)
	_ = append(part, "WWWW"...)
	wantContent(t, s, "k", []byte("original content"))
	whole := mustGet(t, s, "k", 0, -1)
	_ = append(whole, "WWWW"...)
	wantContent(t, s, "k", []byte("original content"))
}

// testGetInto: GetInto returns the whole object whether or not it fits the
// buffer offered, and a missing key is ErrNotFound.
func testGetInto(t *testing.T, s objectio.Store) {
	ctx := context.Background()
	mustPut(t, s, "k", []byte("original content"), objectio.PutOptions{})
	readsInto := objectio.ReleasesData(s)
	for _, size := range []int{0, 4, 64} {
		buf := make([]byte, 3, size+3)
		got, err := objectio.GetInto(ctx, s, "k", buf)
		if err != nil || string(got) != "original content" {
			t.Fatalf("GetInto with a buffer of capacity %d = %q, %v; want the object", size+3, got, err)
		}
		// A store that does not keep what it is given (and so hands out
		// fresh memory) reads into the buffer when the object fits: that
		// is the allocation GetInto exists to save.
		if fits := cap(buf) >= len(got); readsInto && fits && &got[0] != &buf[:1][0] {
			t.Errorf("GetInto with a buffer of capacity %d read the object into other memory", cap(buf))
		}
	}
	if _, err := objectio.GetInto(ctx, s, "missing", nil); !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("GetInto of a missing key = %v, want ErrNotFound", err)
	}
}

func testInvalidKeys(t *testing.T, s objectio.Store) {
	ctx := context.Background()
	bad := []string{"", "/abs", "a/../b", "..", "a..b", `a\b`, "a\x00b", "a//b", "a/", "./a", "a/./b", ".tmp/x", strings.Repeat("k", 1025)}
	for _, key := range bad {
		if err := s.Put(ctx, key, []byte("x"), objectio.PutOptions{}); !errors.Is(err, objectio.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := s.Put(ctx, key, []byte("x"), objectio.PutOptions{IfAbsent: true}); !errors.Is(err, objectio.ErrInvalidKey) {
			t.Errorf("Put(%q, IfAbsent) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, objectio.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, objectio.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	wantKeys(t, "List after rejected puts", mustList(t, s, "", "", 0).Objects, []string{})
}

func testCanceledContext(t *testing.T, s objectio.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "k", []byte("x"), objectio.PutOptions{}); err == nil {
		t.Errorf("Put with a canceled context = nil, want an error")
	}
	if _, err := s.Get(ctx, "k", 0, -1); err == nil {
		t.Errorf("Get with a canceled context = nil, want an error")
	}
	if _, err := s.List(ctx, "", "", 0); err == nil {
		t.Errorf("List with a canceled context = nil, want an error")
	}
	if err := s.Delete(ctx, "k"); err == nil {
		t.Errorf("Delete with a canceled context = nil, want an error")
	}
}
