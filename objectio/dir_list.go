package objectio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// List implements Store.
//
// The walk starts at the deepest directory that holds every key with the
// prefix: for "meta/log/0000" that is root/meta/log, whose names are then
// filtered by the prefix. Within a directory, entries are visited in the
// order of their key strings, a subdirectory "a" counting as "a/". That
// yields keys in byte order: every key under "a/" sorts after a sibling
// "a-c" ('-' < '/') and before "a0" ('/' < '0'), exactly where a depth-first
// visit puts them. So the walk can stop once it has max+1 keys, and can skip
// whole subtrees that sort at or before startAfter.
func (d *Dir) List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if max <= 0 {
		max = listMaxDefault
	}
	if !prefixCanMatch(prefix) {
		return ListPage{}, nil
	}
	base := prefix[:strings.LastIndexByte(prefix, '/')+1]
	w := dirWalk{ctx: ctx, prefix: prefix, startAfter: startAfter, max: max}
	if err := w.walk(filepath.Join(d.root, filepath.FromSlash(base)), base); err != nil {
		return ListPage{}, fmt.Errorf("objectio: list %q: %w", prefix, err)
	}
	return ListPage{Objects: w.objects, Truncated: w.truncated}, nil
}

// dirWalk is the state of one List call's depth-first walk.
type dirWalk struct {
	ctx        context.Context
	prefix     string
	startAfter string
	max        int

	objects   []ObjectInfo
	truncated bool // set once a key beyond max is seen; the walk then stops
}

// walkEntry is a directory entry named by its key ("a" for a file,
// "a/" for a directory).
type walkEntry struct {
	key   string
	isDir bool
	entry os.DirEntry
}

// walk visits the directory at path, whose entries have keys keyPrefix+name.
func (w *dirWalk) walk(path, keyPrefix string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		if isMissing(err) {
			// No such prefix, or a Delete pruned it meanwhile.
			return nil
		}
		return err
	}
	for _, e := range w.candidates(entries, keyPrefix) {
		if e.isDir {
			err = w.walk(filepath.Join(path, e.entry.Name()), e.key)
		} else {
			err = w.visitFile(e)
		}
		if err != nil || w.truncated {
			return err
		}
	}
	return nil
}

// candidates keeps the entries that may hold matching keys, in key order.
func (w *dirWalk) candidates(entries []os.DirEntry, keyPrefix string) []walkEntry {
	kept := make([]walkEntry, 0, len(entries))
	for _, e := range entries {
		if keyPrefix == "" && e.Name() == tmpDirName {
			continue // staging area, never objects
		}
		switch {
		case e.Type().IsRegular():
			key := keyPrefix + e.Name()
			if strings.HasPrefix(key, w.prefix) && key > w.startAfter {
				kept = append(kept, walkEntry{key: key, entry: e})
			}
		case e.IsDir():
			key := keyPrefix + e.Name() + "/"
			if w.mayHoldMatches(key) {
				kept = append(kept, walkEntry{key: key, isDir: true, entry: e})
			}
		}
		// Anything else (symlinks, sockets) was not made by Put.
	}
	slices.SortFunc(kept, func(a, b walkEntry) int { return strings.Compare(a.key, b.key) })
	return kept
}

// mayHoldMatches reports whether the subtree whose keys all start with
// dirKey (ending in '/') can hold a key with the prefix after startAfter.
func (w *dirWalk) mayHoldMatches(dirKey string) bool {
	if !strings.HasPrefix(dirKey, w.prefix) && !strings.HasPrefix(w.prefix, dirKey) {
		return false
	}
	// If startAfter is past dirKey without being inside the subtree, it
	// differs from dirKey at some byte where it is larger, so it is larger
	// than every key in the subtree.
	return !(w.startAfter > dirKey && !strings.HasPrefix(w.startAfter, dirKey))
}

func (w *dirWalk) visitFile(e walkEntry) error {
	info, err := e.entry.Info()
	if err != nil {
		if isMissing(err) {
			return nil // deleted since ReadDir: listed as already gone
		}
		return err
	}
	if len(w.objects) == w.max {
		w.truncated = true
		return nil
	}
	w.objects = append(w.objects, ObjectInfo{Key: e.key, Size: info.Size()})
	return nil
}
