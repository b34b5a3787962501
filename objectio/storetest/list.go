package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// putAll stores a small object under each key.
func putAll(t *testing.T, s objectio.Store, keys []string) {
	t.Helper()
	for i, k := range keys {
		mustPut(t, s, k, pattern(i, i+1), objectio.PutOptions{})
	}
}

// testListOrderAndPrefix uses keys whose byte order differs from the order
// of a naive directory walk: "p/a-c" < "p/a/b" < "p/a0" because
// '-' < '/' < '0'.
func testListOrderAndPrefix(t *testing.T, s objectio.Store) {
	putAll(t, s, []string{"p/a0", "p/a/b", "q/z", "p/a-c", "p/b", "o/z", "p/a.x", "p/a/c/d", "pp"})
	wantKeys(t, "List(p/)", mustList(t, s, "p/", "", 0).Objects,
		[]string{"p/a-c", "p/a.x", "p/a/b", "p/a/c/d", "p/a0", "p/b"})
	wantKeys(t, "List(p)", mustList(t, s, "p", "", 0).Objects,
		[]string{"p/a-c", "p/a.x", "p/a/b", "p/a/c/d", "p/a0", "p/b", "pp"})
	wantKeys(t, "List()", mustList(t, s, "", "", 0).Objects,
		[]string{"o/z", "p/a-c", "p/a.x", "p/a/b", "p/a/c/d", "p/a0", "p/b", "pp", "q/z"})
	wantKeys(t, "List(p/a/)", mustList(t, s, "p/a/", "", 0).Objects, []string{"p/a/b", "p/a/c/d"})

	page := mustList(t, s, "p/b", "", 0)
	if len(page.Objects) != 1 || page.Objects[0].Size != 5 || page.Truncated {
		t.Fatalf("List(p/b) = %+v, want one object p/b of 5 bytes, not truncated", page)
	}
}

func testListStartAfter(t *testing.T, s objectio.Store) {
	putAll(t, s, []string{"k/1", "k/2", "k/3/x", "k/4", "l/1"})
	cases := []struct {
		startAfter string
		want       []string
	}{
		{"", []string{"k/1", "k/2", "k/3/x", "k/4"}},
		{"a", []string{"k/1", "k/2", "k/3/x", "k/4"}}, // before the prefix
		{"k/1", []string{"k/2", "k/3/x", "k/4"}},      // an existing key is excluded
		{"k/15", []string{"k/2", "k/3/x", "k/4"}},     // not a key
		{"k/3", []string{"k/3/x", "k/4"}},             // inside a "directory"
		{"k/3/x", []string{"k/4"}},                    // last key in a "directory"
		{"k/3/y", []string{"k/4"}},                    // past a "directory"
		{"k/4", []string{}},                           // the last key
		{"k/5", []string{}},                           // past every key
		{"z", []string{}},                             // past the prefix
	}
	for _, c := range cases {
		page := mustList(t, s, "k/", c.startAfter, 0)
		wantKeys(t, fmt.Sprintf("List(k/, startAfter %q)", c.startAfter), page.Objects, c.want)
		if page.Truncated {
			t.Errorf("List(k/, startAfter %q).Truncated = true, want false", c.startAfter)
		}
	}
}

// testListPaging lists 2500 keys in pages of 1000, the default and S3's cap.
func testListPaging(t *testing.T, s objectio.Store) {
	const keyCount = 2500
	all := make([]string, keyCount)
	for i := range all {
		all[i] = fmt.Sprintf("page/%020d", i)
	}
	putConcurrently(t, s, all)
	mustPut(t, s, "pagf", []byte("outside the prefix"), objectio.PutOptions{})

	steps := []struct {
		startAfter string
		max        int
		want       []string
		truncated  bool
	}{
		{"", 1000, all[:1000], true},
		{all[999], 1000, all[1000:2000], true},
		{all[1999], 1000, all[2000:], false},
		{"", 0, all[:1000], true},               // max <= 0 means 1000
		{"", -5, all[:1000], true},              // likewise
		{all[1499], 1000, all[1500:], false},    // the rest fits exactly
		{all[1498], 1000, all[1499:2499], true}, // one key left over
		{"", 1, all[:1], true},
		{all[2498], 1, all[2499:], false},
	}
	for _, st := range steps {
		page := mustList(t, s, "page/", st.startAfter, st.max)
		what := fmt.Sprintf("List(page/, startAfter %q, max %d)", st.startAfter, st.max)
		if len(page.Objects) != len(st.want) {
			t.Fatalf("%s returned %d keys, want %d", what, len(page.Objects), len(st.want))
		}
		wantKeys(t, what, page.Objects, st.want)
		if page.Truncated != st.truncated {
			t.Errorf("%s.Truncated = %v, want %v", what, page.Truncated, st.truncated)
		}
	}

	listed, err := objectio.ListAll(context.Background(), s, "page/")
	if err != nil {
		t.Fatalf("ListAll(page/) = %v, want nil", err)
	}
	wantKeys(t, "ListAll(page/)", listed, all)
}

// putConcurrently stores the keys with a bounded number of writers, so the
// suite stays quick on stores where each Put is a round trip or an fsync.
func putConcurrently(t *testing.T, s objectio.Store, keys []string) {
	t.Helper()
	const writerCount = 32
	var wg sync.WaitGroup
	errs := make(chan error, writerCount)
	for w := range writerCount {
		wg.Go(func() {
			for i := w; i < len(keys); i += writerCount {
				if err := s.Put(context.Background(), keys[i], []byte(keys[i]), objectio.PutOptions{}); err != nil {
					errs <- fmt.Errorf("Put(%q) = %w", keys[i], err)
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

// testListMidNamePrefix lists the metadata log from an entry number onward,
// as recovery does, with a prefix that ends in the middle of a name.
func testListMidNamePrefix(t *testing.T, s objectio.Store) {
	putAll(t, s, []string{
		"meta/log/00000000000000000041",
		"meta/log/00000000000000000042",
		"meta/log/00000000000000000043",
		"meta/log/00000000000000001000",
		"meta/logx",
		"meta/snap/00000000000000000040",
	})
	cases := []struct {
		prefix string
		want   []string
	}{
		{"meta/log/0000000000000000004", []string{
			"meta/log/00000000000000000041", "meta/log/00000000000000000042", "meta/log/00000000000000000043"}},
		{"meta/log/00000000000000000042", []string{"meta/log/00000000000000000042"}},
		{"meta/log/000000000000000010", []string{"meta/log/00000000000000001000"}},
		{"meta/log/1", []string{}},
		{"meta/lo", []string{
			"meta/log/00000000000000000041", "meta/log/00000000000000000042", "meta/log/00000000000000000043",
			"meta/log/00000000000000001000", "meta/logx"}},
		{"meta/s", []string{"meta/snap/00000000000000000040"}},
		{"me", []string{
			"meta/log/00000000000000000041", "meta/log/00000000000000000042", "meta/log/00000000000000000043",
			"meta/log/00000000000000001000", "meta/logx", "meta/snap/00000000000000000040"}},
	}
	for _, c := range cases {
		wantKeys(t, fmt.Sprintf("List(%q)", c.prefix), mustList(t, s, c.prefix, "", 0).Objects, c.want)
	}
	page := mustList(t, s, "meta/log/0000000000000000004", "meta/log/00000000000000000041", 1)
	wantKeys(t, "List(mid-name prefix, startAfter 41, max 1)", page.Objects, []string{"meta/log/00000000000000000042"})
	if !page.Truncated {
		t.Errorf("List(mid-name prefix, startAfter 41, max 1).Truncated = false, want true (43 follows)")
	}
}

func testListMissingPrefix(t *testing.T, s objectio.Store) {
	wantKeys(t, "List on an empty store", mustList(t, s, "", "", 0).Objects, []string{})
	putAll(t, s, []string{"a/b"})
	for _, prefix := range []string{"nonexistent/dir/", "a/b/", "a/bc", "b", "../", "/a", "a//", ".tmp/", `a\`} {
		page := mustList(t, s, prefix, "", 0)
		wantKeys(t, fmt.Sprintf("List(%q)", prefix), page.Objects, []string{})
		if page.Truncated {
			t.Errorf("List(%q).Truncated = true, want false", prefix)
		}
	}
}
