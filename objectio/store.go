// Package objectio is the storage layer of sluice: a small object-store
// interface with the four operations the log needs (Put with an optional
// if-absent condition, ranged Get, ordered List, Delete) and its backends.
//
// Object storage is the only durable layer, so every backend must give the
// same guarantees S3 gives: a Put is atomic (readers see the whole old object
// or the whole new one, never a mix or a prefix), an if-absent Put has exactly
// one winner among racing creators, and List returns keys in ascending byte
// order. The metadata log's fencing rests on the if-absent Put; see DESIGN.md.
//
// The conformance suite in objectio/storetest states these guarantees as
// tests and runs against every backend.
package objectio

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// The errors callers branch on. Backends wrap them with the key, so compare
// with errors.Is, never ==.
var (
	// ErrExists means an if-absent Put lost: an object already has the key.
	// For the metadata log this is how a stale sequencer learns it is fenced.
	ErrExists = errors.New("objectio: object already exists")
	// ErrNotFound means no object has the key.
	ErrNotFound = errors.New("objectio: object not found")
	// ErrInvalidKey means the key breaks the key rules (see validateKey). It
	// is a programming error, never a storage condition worth retrying.
	ErrInvalidKey = errors.New("objectio: invalid key")
	// ErrInvalidRange means a Get asked for a negative offset or an offset
	// past the end of the object.
	ErrInvalidRange = errors.New("objectio: invalid range")
)

const (
	// listMaxDefault is the page size when List is called with max <= 0.
	// It matches S3's cap on max-keys, so a page never promises more than
	// S3 can return.
	listMaxDefault = 1000
	// keyLenMax is S3's limit on key length in bytes. Enforcing it in every
	// backend keeps keys portable from the embedded store to S3.
	keyLenMax = 1024
	// tmpDirName is the Dir backend's staging directory under its root. The
	// top-level segment is reserved in every backend so that the set of
	// valid keys is the same everywhere.
	tmpDirName = ".tmp"
)

// PutOptions are the conditions of a Put.
type PutOptions struct {
	// IfAbsent creates the object only if no object has the key, as S3's
	// "If-None-Match: *". Exactly one of several racing creators wins; the
	// others get ErrExists.
	IfAbsent bool
}

// ObjectInfo describes one listed object.
type ObjectInfo struct {
	Key  string
	Size int64
}

// ListPage is one page of a listing.
type ListPage struct {
	// Objects are in ascending byte order of Key.
	Objects []ObjectInfo
	// Truncated reports that more keys match after the last one returned;
	// pass that key as startAfter to get the next page.
	Truncated bool
}

// Store is an S3-like object store. Implementations are safe for concurrent
// use.
//
// Bytes are shared, not copied: a Put may keep data (the mem store does), so
// the caller must not modify data once Put is called, and the bytes a Get
// returns may be the stored ones, so the caller must not modify them
// either. Sluice never writes into an object after it is sealed (fetches
// send offsets beside the stored bytes), so the copies a store would make
// to defend itself would only cost time.
type Store interface {
	// Put stores data under key. With IfAbsent it fails with ErrExists if the
	// key exists; exactly one of racing creators wins. data must not be
	// modified afterwards.
	Put(ctx context.Context, key string, data []byte, opt PutOptions) error
	// Get returns length bytes starting at offset; length < 0 means to the
	// end. ErrNotFound if absent. Range past end is clipped (offset > size
	// is an error). The bytes must not be modified; appending to them is
	// safe (their capacity ends at their length).
	Get(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// List returns up to max (<=0 means 1000) keys with prefix, strictly
	// after startAfter, ascending.
	List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error)
	// Delete removes key; deleting a missing key is not an error (as in S3).
	Delete(ctx context.Context, key string) error
}

// ReleasesData reports whether s is done with the bytes given to Put once
// Put returns, so that the caller may reuse the buffer. A store says so with
// a ReleasesData method; one that does not is taken to keep the bytes, as
// the mem store does.
func ReleasesData(s Store) bool {
	r, ok := s.(interface{ ReleasesData() bool })
	return ok && r.ReleasesData()
}

// GetInto reads the whole object under key into buf's memory when it fits
// (else into fresh memory) and returns it: a reader that recycles buffers
// avoids allocating one per object. Stores without a GetInto method fall
// back to Get, whose bytes the caller must then not recycle into buf's
// place: GetInto's result may or may not share buf.
func GetInto(ctx context.Context, s Store, key string, buf []byte) ([]byte, error) {
	if g, ok := s.(interface {
		GetInto(ctx context.Context, key string, buf []byte) ([]byte, error)
	}); ok {
		return g.GetInto(ctx, key, buf)
	}
	return s.Get(ctx, key, 0, -1)
}

// into returns n bytes to read into: buf's memory if it has room, else
// fresh memory. A nil buf always gets fresh memory, so that an empty object
// reads as an empty slice, not nil.
func into(buf []byte, n int64) []byte {
	if buf != nil && int64(cap(buf)) >= n {
		return buf[:n]
	}
	return make([]byte, n)
}

// ListAll pages through List and returns every object with prefix, in
// ascending key order. It is meant for bounded prefixes (recovery, GC); a
// listing that changes while it runs is seen as S3 would show it: each page
// is a fresh look.
func ListAll(ctx context.Context, s Store, prefix string) ([]ObjectInfo, error) {
	return ListAfter(ctx, s, prefix, "")
}

// ListAfter is ListAll of the keys strictly after startAfter.
func ListAfter(ctx context.Context, s Store, prefix, startAfter string) ([]ObjectInfo, error) {
	var all []ObjectInfo
	for {
		page, err := s.List(ctx, prefix, startAfter, 0)
		if err != nil {
			return nil, err
		}
		all = append(all, page.Objects...)
		if !page.Truncated {
			return all, nil
		}
		if len(page.Objects) == 0 {
			// A truncated empty page gives no key to continue after;
			// looping would never end.
			return nil, fmt.Errorf("objectio: list %q returned an empty page marked truncated", prefix)
		}
		startAfter = page.Objects[len(page.Objects)-1].Key
	}
}

// validateKey enforces the key rules shared by all backends. Keys are
// slash-separated relative paths. The Dir backend maps them onto the file
// system, so anything that could escape the root or name something other
// than a plain file is refused: absolute keys, "..", backslashes, NUL, empty
// or "." segments (which also rules out a trailing slash), and the reserved
// top-level ".tmp". S3 would accept most of these; refusing them everywhere
// keeps the embedded store and S3 interchangeable.
func validateKey(key string) error {
	reason := ""
	switch {
	case key == "":
		reason = "empty"
	case len(key) > keyLenMax:
		reason = fmt.Sprintf("longer than %d bytes", keyLenMax)
	case key[0] == '/':
		reason = "absolute"
	case strings.Contains(key, ".."):
		reason = `contains ".."`
	case strings.ContainsAny(key, "\\\x00"):
		reason = "contains a backslash or NUL"
	default:
		reason = segmentProblem(key)
	}
	if reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, key, reason)
	}
	return nil
}

// segmentProblem returns why a key's path segments are unusable, or "".
func segmentProblem(key string) string {
	for i, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return "has an empty path segment"
		case seg == ".":
			return `has a "." path segment`
		case i == 0 && seg == tmpDirName:
			return `starts with the reserved segment "` + tmpDirName + `"`
		}
	}
	return ""
}

// prefixCanMatch reports whether any valid key could start with prefix.
// Backends that map prefixes onto paths use it so that a hostile prefix
// ("../x") never reaches the file system; it simply lists nothing, as S3
// would for a prefix no object has.
func prefixCanMatch(prefix string) bool {
	if prefix == "" {
		return true
	}
	if prefix[0] == '/' || strings.Contains(prefix, "..") || strings.ContainsAny(prefix, "\\\x00") {
		return false
	}
	// Every complete segment (those followed by a slash) must be valid.
	// The trailing partial segment may be anything: it is only matched
	// as a name prefix.
	dirPart := prefix[:strings.LastIndexByte(prefix, '/')+1]
	if dirPart == "" {
		return true
	}
	return segmentProblem(dirPart[:len(dirPart)-1]) == ""
}

// clipRange resolves Get's (offset, length) against an object of size bytes.
// It returns the start and the number of bytes to read. Reading at exactly
// the end is allowed and yields nothing, so a reader that has consumed an
// object can ask for "the rest" without a special case.
func clipRange(size, offset, length int64) (start, n int64, err error) {
	if offset < 0 || offset > size {
		return 0, 0, fmt.Errorf("%w: offset %d in an object of %d bytes", ErrInvalidRange, offset, size)
	}
	n = size - offset
	if length >= 0 && length < n {
		n = length
	}
	return offset, n, nil
}

// notFound wraps ErrNotFound with the key.
func notFound(key string) error {
	return fmt.Errorf("%w: %q", ErrNotFound, key)
}

// exists wraps ErrExists with the key.
func exists(key string) error {
	return fmt.Errorf("%w: %q", ErrExists, key)
}
