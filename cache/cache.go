// Package cache is the agent's segment cache: patched batch bytes keyed by
// their place in a data object, bounded in bytes (ristretto), with
// single-flight loads so that many fetches of a cold batch cost one GET.
package cache

import (
	"strconv"

	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/sync/singleflight"
)

// Cache holds byte ranges of data objects. Values are never modified after
// they are added: readers hand them straight to writev.
type Cache struct {
	rc *ristretto.Cache[string, []byte]
	sf singleflight.Group
}

// New returns a cache holding at most maxBytes of values.
func New(maxBytes int64) (*Cache, error) {
	if maxBytes < 1<<20 {
		maxBytes = 1 << 20
	}
	rc, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
		// About ten counters per expected entry; batches average a few KiB.
		NumCounters:        max(maxBytes/4096*10, 10000),
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
	})
	if err != nil {
		return nil, err
	}
	return &Cache{rc: rc}, nil
}

// Key names the range [pos, pos+len) of object.
func Key(object string, pos int64) string {
	return object + "@" + strconv.FormatInt(pos, 10)
}

// ObjectKey names a whole data object (read once on a miss, then split).
func ObjectKey(object string) string { return "object:" + object }

// WrittenKey names a whole data object this agent wrote, cached at commit:
// its committed batches were patched in place, so they are served as slices
// of it. Caching the object rather than its batches keeps the cache's
// account true: a cached slice would pin the whole object's memory.
func WrittenKey(object string) string { return "written:" + object }

// Get returns the cached bytes for key.
func (c *Cache) Get(key string) ([]byte, bool) { return c.rc.Get(key) }

// Put adds fresh bytes (write-through of an agent's own flush).
func (c *Cache) Put(key string, b []byte) { c.rc.Set(key, b, int64(len(b))) }

// Settle waits until earlier Puts are visible to Get. Ristretto applies sets
// asynchronously; settling after a write-through lets the consumers that are
// waiting for exactly those bytes find them.
func (c *Cache) Settle() { c.rc.Wait() }

// Load returns key's bytes, calling load at most once at a time per key
// when they are not cached, and caching what it returns.
func (c *Cache) Load(key string, load func() ([]byte, error)) ([]byte, error) {
	if b, ok := c.rc.Get(key); ok {
		return b, nil
	}
	v, err, _ := c.sf.Do(key, func() (any, error) {
		if b, ok := c.rc.Get(key); ok {
			return b, nil
		}
		b, err := load()
		if err != nil {
			return nil, err
		}
		c.rc.Set(key, b, int64(len(b)))
		// Ristretto applies sets asynchronously: without waiting, the
		// next miss for this key right after the flight ends would load
		// it again.
		c.rc.Wait()
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// Close releases the cache's goroutines.
func (c *Cache) Close() { c.rc.Close() }
