// Package cache is the agent's segment cache: stored batch and object bytes
// keyed by their place in a data object, bounded in bytes, least recently
// used out first, with single-flight loads so that many fetches of a cold
// object cost one GET.
//
// A value may own a buffer that is reused once nobody holds it (the agent's
// flush buffers): the cache and every reader each hold a reference, and the
// last to let go hands the buffer back.
//
// Why not ristretto, which DESIGN.md names: its TinyLFU admission is built
// to keep one-off scans out, and a consumer catching up on a log is a scan.
// With 4 consumers reading back what 4 producers wrote, it turned away most
// freshly read objects, and each object was read from the store 9 times
// (sluice_store_reads_total against sluice_objects_written_total). Values
// are few and large (whole objects), so a mutex and a list cost nothing
// measurable, and a Put is visible at once.
package cache

import (
	"container/list"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// Cache holds byte ranges of data objects. Values are never modified after
// they are added: readers hand them straight to writev.
type Cache struct {
	max int64 // bytes
	sf  singleflight.Group

	mu      sync.Mutex
	used    int64                    // bytes of the values held
	entries map[string]*list.Element // of *entry
	lru     list.List                // most recently used first
}

type entry struct {
	key string
	v   *Value
}

// Value is cached bytes. If it has a free function, it counts its holders
// (the cache, and every reader that acquired it) and, when the last one
// releases it, hands its bytes to free for reuse: a reader must Release
// what it acquired, and not touch the bytes afterwards. Without one, the
// garbage collector takes the bytes and Release does nothing.
type Value struct {
	b    []byte
	free func([]byte)
	refs atomic.Int64 // reaches 0 once: acquire refuses a value at 0
}

// Bytes returns the value's bytes.
func (v *Value) Bytes() []byte { return v.b }

// Release lets go of a reference taken by Acquire or Load.
func (v *Value) Release() {
	if v == nil || v.free == nil {
		return
	}
	if v.refs.Add(-1) == 0 {
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

// New returns a cache holding at most maxBytes of values.
func New(maxBytes int64) (*Cache, error) {
	if maxBytes < 1<<20 {
		maxBytes = 1 << 20
	}
	return &Cache{max: maxBytes, entries: map[string]*list.Element{}}, nil
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
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if !e.v.acquire() {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return e.v, true
}

// peek returns the value under key without taking a reference.
func (c *Cache) peek(key string) (*Value, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		return el.Value.(*entry).v, true
	}
	return nil, false
}

// Put adds fresh bytes (write-through of an agent's own flush). free, if
// not nil, gets b back once the cache has dropped it and every reader has
// released it. The cache counts b's capacity: that is the memory it holds.
func (c *Cache) Put(key string, b []byte, free func([]byte)) {
	v := &Value{b: b, free: free}
	v.refs.Store(1)
	c.add(key, v)
}

// add caches v, which holds a reference for the cache, under key, and drops
// the least recently used values until the cache is within its bytes.
func (c *Cache) add(key string, v *Value) {
	cost := costOf(v)
	var dropped []*Value
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		dropped = append(dropped, c.remove(el))
	}
	if cost > c.max {
		dropped = append(dropped, v) // would empty the cache and still not fit
	} else {
		c.entries[key] = c.lru.PushFront(&entry{key: key, v: v})
		c.used += cost
		for c.used > c.max {
			dropped = append(dropped, c.remove(c.lru.Back()))
		}
	}
	c.mu.Unlock()
	// Outside the lock: the last release of a value recycles its buffer.
	for _, d := range dropped {
		d.Release() // the cache's reference; each value leaves the cache once
	}
}

// remove takes an element out; c.mu must be held.
func (c *Cache) remove(el *list.Element) *Value {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.key)
	c.used -= costOf(e.v)
	return e.v
}

// costOf is what a value counts against the cache: the memory it holds.
func costOf(v *Value) int64 { return int64(cap(v.b)) }

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
			// A flight for key may have ended between the miss above and
			// this one starting.
			if v, ok := c.peek(key); ok {
				return v, nil
			}
			b, free, err := load()
			if err != nil {
				return nil, err
			}
			v := &Value{b: b, free: free}
			v.refs.Store(2) // the cache's and the loader's
			c.add(key, v)
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

// Bytes is the memory the cached values hold (their capacity).
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Close drops every value.
func (c *Cache) Close() {
	c.mu.Lock()
	var dropped []*Value
	for el := c.lru.Front(); el != nil; el = c.lru.Front() {
		dropped = append(dropped, c.remove(el))
	}
	c.mu.Unlock()
	for _, d := range dropped {
		d.Release() // the cache's reference; each value leaves the cache once
	}
}
