package objectio_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/storetest"
)

func newDir(t *testing.T, root string) *objectio.Dir {
	t.Helper()
	d, err := objectio.NewDir(root)
	if err != nil {
		t.Fatalf("NewDir(%q) = %v, want nil", root, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// tempFiles returns the files under root/.tmp, in any staging directory.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join(root, ".tmp"), func(path string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("walking .tmp: %v", err)
	}
	return files
}

func TestDirConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectio.Store { return newDir(t, t.TempDir()) })
}

func TestDirTempFilesAreNotListedAndNewDirClearsThem(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := context.Background()
	if err := d.Put(ctx, "data/real", []byte("whole object"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// What writers that crashed between write and link leave behind: a
	// temp file in an unlocked staging directory, and a loose one.
	deadStaging := filepath.Join(root, ".tmp", "w-dead")
	if err := os.Mkdir(deadStaging, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(deadStaging, "put-1"), filepath.Join(root, ".tmp", "put-2")} {
		if err := os.WriteFile(path, []byte("partial obj"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"", ".", ".t", ".tmp", ".tmp/", ".tmp/w-dead/"} {
		page, err := d.List(ctx, prefix, "", 0)
		if err != nil {
			t.Fatalf("List(%q) = %v", prefix, err)
		}
		for _, o := range page.Objects {
			if o.Key != "data/real" {
				t.Errorf("List(%q) lists %q; temp files must never be listed", prefix, o.Key)
			}
		}
	}

	e := newDir(t, root)
	if files := tempFiles(t, root); len(files) != 0 {
		t.Fatalf("after NewDir, .tmp holds %q, want no files", files)
	}
	if _, err := os.Stat(deadStaging); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale staging directory survived NewDir (stat: %v)", err)
	}
	for name, s := range map[string]*objectio.Dir{"first": d, "second": e} {
		if err := s.Put(ctx, "data/"+name, []byte(name), objectio.PutOptions{IfAbsent: true}); err != nil {
			t.Errorf("Put on the %s Dir after the second NewDir = %v, want nil (its staging is live)", name, err)
		}
	}
	got, err := d.Get(ctx, "data/real", 0, -1)
	if err != nil || string(got) != "whole object" {
		t.Fatalf("Get(data/real) after NewDir = %q, %v; want the object untouched", got, err)
	}
}

func TestDirCloseReleasesStagingAndStopsPuts(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := context.Background()
	if err := d.Put(ctx, "k", []byte("v"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, ".tmp")); len(entries) != 0 {
		t.Errorf(".tmp holds %v after the only Dir closed, want it empty", entries)
	}
	if err := d.Put(ctx, "k2", []byte("v"), objectio.PutOptions{}); err == nil {
		t.Errorf("Put after Close = nil, want an error")
	}
	if got, err := d.Get(ctx, "k", 0, -1); err != nil || string(got) != "v" {
		t.Errorf("Get after Close = %q, %v; want \"v\", nil", got, err)
	}
}

func TestDirPutLeavesNoTempFiles(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := context.Background()
	for i := range 5 {
		opt := objectio.PutOptions{IfAbsent: i%2 == 0}
		err := d.Put(ctx, "k", []byte("x"), opt)
		if err != nil && !errors.Is(err, objectio.ErrExists) {
			t.Fatal(err)
		}
	}
	if files := tempFiles(t, root); len(files) != 0 {
		t.Fatalf(".tmp holds %q after Puts returned, want no files", files)
	}
}

// Two Dir values on one root behave like two processes (two sequencers on
// one laptop store): link(2) must let exactly one create each key.
func TestTwoDirsOnOneRootRaceIfAbsentWithOneWinner(t *testing.T) {
	root := t.TempDir()
	a, b := newDir(t, root), newDir(t, root)
	for round := range 8 {
		key := fmt.Sprintf("meta/log/%020d", round)
		storetest.RaceIfAbsent(t, []objectio.Store{a, b}, newDir(t, root), key, 32)
	}
}

// A second process starting (NewDir clears .tmp) while the first is in the
// middle of Puts must not make those Puts fail.
func TestDirPutSurvivesConcurrentNewDirOnSameRoot(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := objectio.NewDir(root); err != nil {
				t.Errorf("NewDir during Puts = %v", err)
				return
			}
		}
	})
	data := make([]byte, 256<<10)
	for i := range 100 {
		key := fmt.Sprintf("data/%04d", i)
		if err := d.Put(ctx, key, data, objectio.PutOptions{IfAbsent: i%2 == 0}); err != nil {
			t.Errorf("Put(%q) while another NewDir clears .tmp = %v, want nil", key, err)
		}
	}
	close(stop)
	wg.Wait()
}

// A file system cannot hold "a" and "a/b" at once. The dir store must say
// so, and must not call it ErrExists: no object has the key.
func TestDirKeyClashingWithAPrefixFailsWithoutExists(t *testing.T) {
	d := newDir(t, t.TempDir())
	ctx := context.Background()
	if err := d.Put(ctx, "a/b", []byte("child"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []objectio.PutOptions{{}, {IfAbsent: true}} {
		err := d.Put(ctx, "a", []byte("parent"), opt)
		if err == nil || errors.Is(err, objectio.ErrExists) {
			t.Errorf("Put(a, %+v) while a/b exists = %v, want a clash error that is not ErrExists", opt, err)
		}
	}
	if _, err := d.Get(ctx, "a", 0, -1); !errors.Is(err, objectio.ErrNotFound) {
		t.Errorf("Get(a) while only a/b exists = %v, want ErrNotFound", err)
	}
	if err := d.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete(a) while only a/b exists = %v, want nil", err)
	}
	if got, err := d.Get(ctx, "a/b", 0, -1); err != nil || string(got) != "child" {
		t.Fatalf("Get(a/b) after Delete(a) = %q, %v; want it untouched", got, err)
	}
	if err := d.Put(ctx, "a/b/c", []byte("grandchild"), objectio.PutOptions{}); err == nil || errors.Is(err, objectio.ErrExists) {
		t.Errorf("Put(a/b/c) while a/b is an object = %v, want a clash error that is not ErrExists", err)
	}
	if _, err := d.Get(ctx, "a/b/c", 0, -1); !errors.Is(err, objectio.ErrNotFound) {
		t.Errorf("Get(a/b/c) while a/b is an object = %v, want ErrNotFound", err)
	}

	// Once a/b is gone its directory is pruned and "a" is free.
	if err := d.Delete(ctx, "a/b"); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "a", []byte("parent"), objectio.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("Put(a, IfAbsent) after deleting a/b = %v, want nil", err)
	}
}

func TestDirDeletePrunesEmptyDirectories(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := context.Background()
	for _, key := range []string{"x/y/z/1", "x/y/z/2", "x/w"} {
		if err := d.Put(ctx, key, []byte("v"), objectio.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"x/y/z/1", "x/y/z/2"} {
		if err := d.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "x", "y")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("x/y still exists after its last object was deleted (stat: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "x", "w")); err != nil {
		t.Errorf("x/w is gone after deleting other keys: %v", err)
	}
	if err := d.Delete(ctx, "x/w"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != ".tmp" {
		t.Errorf("root holds %v after every object was deleted, want only .tmp", entries)
	}
}

// Deletes prune directories that concurrent Puts are about to use; the
// Puts must start over rather than fail.
func TestDirPutRacingPruningDeletesSucceeds(t *testing.T) {
	d := newDir(t, t.TempDir())
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				key := fmt.Sprintf("gc/%d/obj-%d-%d", i%3, w, i)
				if err := d.Put(ctx, key, []byte("v"), objectio.PutOptions{IfAbsent: true}); err != nil {
					t.Errorf("Put(%q) = %v, want nil", key, err)
					return
				}
				if err := d.Delete(ctx, key); err != nil {
					t.Errorf("Delete(%q) = %v, want nil", key, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
