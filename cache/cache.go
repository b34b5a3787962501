// Package cache is the agent's segment cache: stored batch and object bytes
// keyed by their place in a data object, bounded in bytes (ristretto), with
// single-flight loads so that many fetches of a cold batch cost one GET.
//
// A value may own a buffer that is reused once nobody holds it (the agent's
// flush buffers): the cache and every reader each hold a reference, and the
// last to let go hands the buffer back.
package cache

import (
	"strconv"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/sync/singleflight"
)

// Cache holds byte ranges of data objects. Values are never modified after
// they are added: readers hand them straight to writev.
type Cache struct {
	rc *ristretto.Cache[string, *Value]
	sf singleflight.Group
}

// Value is cached bytes. If it has a free function, it counts its holders
// (the cache, and every reader that acquired it) and, when the last one
// releases it, hands its bytes to free for reuse: a reader must Release
// what it acquired, and not touch the bytes afterwards. Without one, the
// garbage collector takes the bytes and Release does nothing.
type Value struct {
	b        []byte
	free     func([]byte)
	refs     atomic.Int64
	inCache  atomic.Bool
	released atomic.Bool // free has been called
}

// Bytes returns the value's bytes.
func (v *Value) Bytes() []byte { return v.b }

// Release lets go of a reference taken by Acquire or Load.
func (v *Value) Release() {
	if v == nil || v.free == nil {
		return
	}
	if v.refs.Add(-1) == 0 && v.released.CompareAndSwap(false, true) {
		v.free(v.b)
	}
}

// acquire takes a reference, unless the last one was already released.
func (v *Value) acquire() bool {
	if v.free == nil {
		return true
	}
	for {
		n := v.refs.Load()
		if n <= 0 {
			return false
		}
		if v.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// leaveCache drops the cache's own reference, once.
func (v *Value) leaveCache() {
	if v != nil && v.inCache.CompareAndSwap(true, false) {
		v.Release()
	}
}

// New returns a cache holding at most maxBytes of values.
func New(maxBytes int64) (*Cache, error) {
	if maxBytes < 1<<20 {
		maxBytes = 1 << 20
	}
	rc, err := ristretto.NewCache(&ristretto.Config[string, *Value]{
		// About ten counters per expected entry; batches average a few KiB.
		NumCounters:        max(maxBytes/4096*10, 10000),
		MaxCost:            maxBytes,
		BufferItems:        64,
		IgnoreInternalCost: true,
		// Evicted, rejected, replaced or deleted.
		OnExit: func(v *Value) { v.leaveCache() },
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

// WrittenKey names a whole data object this agent wrote, cached at commit,
// whose batches are served as slices of it. Caching the object rather than
// its batches keeps the cache's account true: a cached slice would pin the
// whole object's memory.
func WrittenKey(object string) string { return "written:" + object }

// Acquire returns the value cached under key, with a reference the caller
// must Release.
func (c *Cache) Acquire(key string) (*Value, bool) {
	v, ok := c.rc.Get(key)
	if !ok || !v.acquire() {
		return nil, false
	}
	return v, true
}

// Put adds fresh bytes (write-through of an agent's own flush). free, if
// not nil, gets b back once the cache has dropped it and every reader has
// released it. The cache counts b's capacity: that is the memory it holds.
func (c *Cache) Put(key string, b []byte, free func([]byte)) {
	v := &Value{b: b, free: free}
	v.refs.Store(1)
	v.inCache.Store(true)
	if !c.rc.Set(key, v, int64(cap(b))) {
		v.leaveCache() // dropped: ristretto's set buffer was full
	}
}

// Settle waits until earlier Puts are visible to Acquire. Ristretto applies
// sets asynchronously; settling after a write-through lets the consumers
// that are waiting for exactly those bytes find them.
func (c *Cache) Settle() { c.rc.Wait() }

// Load returns key's value, calling load at most once at a time per key when
// it is not cached, and caching what it returns. The caller must Release
// the value. Loaded bytes are left to the garbage collector.
func (c *Cache) Load(key string, load func() ([]byte, error)) (*Value, error) {
	return c.LoadOwned(key, func() ([]byte, func([]byte), error) {
		b, err := load()
		return b, nil, err
	})
}

// LoadOwned is Load for bytes that may be recycled: load also returns the
// function that takes them back once the cache and every reader have let
// go (nil leaves them to the collector).
func (c *Cache) LoadOwned(key string, load func() ([]byte, func([]byte), error)) (*Value, error) {
	for {
		if v, ok := c.Acquire(key); ok {
			return v, nil
		}
		var mine *Value // set only in the goroutine that ran load
		r, err, _ := c.sf.Do(key, func() (any, error) {
			b, free, err := load()
			if err != nil {
				return nil, err
			}
			v := &Value{b: b, free: free}
			v.refs.Store(2) // the cache's and the loader's
			v.inCache.Store(true)
			if !c.rc.Set(key, v, int64(cap(b))) {
				v.leaveCache()
			}
			// Ristretto applies sets asynchronously: without waiting, the
			// next miss for this key right after the flight ends would
			// load it again.
			c.rc.Wait()
			mine = v
			return v, nil
		})
		if err != nil {
			return nil, err
		}
		if mine != nil {
			return mine, nil
		}
		if v := r.(*Value); v.acquire() {
			return v, nil
		}
		// The value was dropped and released before this caller, who
		// shared the load, could take a reference: load it again.
	}
}

// Close releases the cache's goroutines.
func (c *Cache) Close() { c.rc.Close() }
