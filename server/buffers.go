package server

import (
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/valyala/bytebufferpool"
)

// flushBuffers recycles the agent's flush buffers. Under a steady load every
// object is --flush-bytes; making each one fresh costs page faults as the
// kernel hands out new memory, and garbage that the collector must find and
// return (under the memory limit the runtime gives freed pages back to the
// OS, only for the next buffer to fault them in again). An object's buffer
// comes back here once the cache has dropped the object and no response
// being written holds a slice of it.
type flushBuffers struct {
	size   int           // --flush-bytes: buffers of size/2 to size are kept
	reused *atomic.Int64 // counts the buffers handed out again

	// poison, set by tests, overwrites a buffer as it comes back, so that a
	// reader still holding it would see garbage at once rather than only
	// once a later object is written into it.
	poison atomic.Bool

	mu   sync.Mutex
	free [][]byte
}

// flushBuffersKept bounds the idle buffers kept: a buffer comes back when a
// new object evicts an old one from the cache, and the next window takes
// it, so a few are enough.
const flushBuffersKept = 4

// bufferFillMin is the least part of a recycled buffer worth filling: the
// cache counts a value's whole buffer, so a small object in a large buffer
// makes it keep that many times fewer objects. Objects under it get memory
// of their own size. Between, reuse wins: a buffer fresh from the kernel
// costs page faults and garbage, and objects a few MiB in size are common
// under load (windows sealed on idle, or before a batch that would not fit).
const bufferFillMin = 8

// get returns an empty buffer of at least the given capacity, and at most
// bufferFillMin times it: a light load's small window must not take a
// whole buffer.
func (p *flushBuffers) get(capacity int) []byte {
	p.mu.Lock()
	for i, b := range p.free {
		if cap(b) >= capacity && cap(b) <= bufferFillMin*capacity {
			last := len(p.free) - 1
			p.free[i], p.free[last] = p.free[last], nil
			p.free = p.free[:last]
			p.mu.Unlock()
			p.reused.Add(1)
			return b[:0]
		}
	}
	p.mu.Unlock()
	return make([]byte, 0, capacity)
}

// put takes back a buffer nothing holds any more. Small buffers are left to
// the collector: they come from light loads, where making them is cheap.
func (p *flushBuffers) put(b []byte) {
	if p.poison.Load() {
		clear(b[:cap(b)])
	}
	if cap(b) < p.size/2 || cap(b) > p.size {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < flushBuffersKept {
		p.free = append(p.free, b)
	}
}

// Request frames. Most requests are small and come from bytebufferpool,
// whose buffers settle at the size most calls need; it drops larger ones.
// Produce requests are the exception, often megabytes each, and at full
// speed they arrive at the produce rate: they come from pools by power-of-
// two size instead, so that a steady load allocates none.
const (
	largeFrameMin = 64 << 10 // smaller requests stay in bytebufferpool's buffers
	largeFrameMax = 16 << 20 // larger ones grow as their bytes arrive, pooled or not
)

// largeFrames[c] holds buffers of capacity 1<<c up to twice that.
var largeFrames [bits.UintSize]sync.Pool

// getFrame returns an empty buffer for a request of need bytes: from the
// pools by size if it is large (up to largeFrameMax), else from
// bytebufferpool, to grow as the request's bytes arrive.
func getFrame(need int) *bytebufferpool.ByteBuffer {
	f := bytebufferpool.Get()
	f.B = f.B[:0]
	if need > largeFrameMin && need <= largeFrameMax {
		c := bits.Len(uint(need - 1))
		if p, ok := largeFrames[c].Get().(*[]byte); ok {
			f.B = (*p)[:0]
		} else {
			f.B = make([]byte, 0, 1<<c)
		}
	}
	return f
}

// putFrame takes back a request's buffer once nothing reads it. A large
// buffer goes to the pool of the largest size it can hold (one grown as its
// bytes arrived may have any capacity) if getFrame takes from that pool;
// else it is dropped, rather than kept in bytebufferpool to serve small
// requests.
func putFrame(f *bytebufferpool.ByteBuffer) {
	if n := cap(f.B); n > largeFrameMin {
		if c := bits.Len(uint(n)) - 1; 1<<c > largeFrameMin && 1<<c <= largeFrameMax {
			b := f.B[:0]
			largeFrames[c].Put(&b)
		}
		f.B = nil
	}
	bytebufferpool.Put(f)
}
