package server

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// plan resolves the fetch under the replica's read lock.
func (a *Agent) plan(parts []*core.PartRead, maxBytes int64) (total int64, anyErr bool) {
	a.view(func(st *sequencer.State) { total, anyErr = core.PlanRead(st, parts, maxBytes, a.cfg.OtherAgents) })
	return total, anyErr
}

// batchFinder finds one fetch's batches in the cache, or reads them from
// the store, and holds the cached values they are slices of until the
// response is written (release). Consecutive batches mostly lie in the same
// object (an object holds every partition's batches of one flush window),
// so it looks each object up once.
type batchFinder struct {
	a       *Agent
	held    []*cache.Value // released once the response is written
	object  string         // the object looked up last
	data    []byte         // its bytes, if cached whole
	written bool           // data is an object this agent wrote, so trusted
}

// release lets go of every value the fetch held.
func (f *batchFinder) release() {
	for _, v := range f.held {
		v.Release()
	}
	f.held = nil
}

// cachedAll fills every planned batch from the cache, and reports whether
// all of them were there (then no I/O is needed).
func (f *batchFinder) cachedAll(parts []*core.PartRead) bool {
	for _, pr := range parts {
		pr.Batches = pr.Batches[:0]
		for _, e := range pr.Entries {
			b, ok := f.cached(e)
			if !ok {
				return false
			}
			pr.Batches = append(pr.Batches, b)
		}
	}
	return true
}

// load fills every planned batch, reading misses from the store through the
// single-flight cache.
func (f *batchFinder) load(ctx context.Context, parts []*core.PartRead) error {
	for _, pr := range parts {
		pr.Batches = pr.Batches[:0]
		for _, e := range pr.Entries {
			b, ok := f.cached(e)
			if !ok {
				var (
					v   *cache.Value
					err error
				)
				if b, v, err = f.a.loadBatch(ctx, e); err != nil {
					return err
				}
				f.held = append(f.held, v)
				f.object = "" // look again: the object may be cached now
			}
			pr.Batches = append(pr.Batches, b)
		}
	}
	return nil
}

// cached returns a batch from the cache: a slice of an object this agent
// wrote, a slice of an object read whole before, or a batch read alone.
func (f *batchFinder) cached(e sequencer.IndexEntry) ([]byte, bool) {
	if e.Object != f.object {
		f.object, f.data, f.written = e.Object, nil, false
		if v, ok := f.a.cache.Acquire(cache.WrittenKey(e.Object)); ok {
			f.held = append(f.held, v)
			f.data, f.written = v.Bytes(), true
		} else if v, ok := f.a.cache.Acquire(cache.ObjectKey(e.Object)); ok {
			f.held = append(f.held, v)
			f.data = v.Bytes()
		}
	}
	switch {
	case f.written && e.Pos+e.Len <= int64(len(f.data)):
		return f.data[e.Pos : e.Pos+e.Len : e.Pos+e.Len], true
	case f.data != nil && !f.written:
		if b, err := core.CheckEntry(f.data, e); err == nil {
			return b, true
		}
	}
	v, ok := f.a.cache.Acquire(cache.Key(e.Object, e.Pos))
	if !ok {
		return nil, false
	}
	f.held = append(f.held, v)
	return v.Bytes(), true
}

// wholeObjectsCached is how many objects the cache must hold for a miss to
// read the whole object rather than the batch.
const wholeObjectsCached = 8

// readBatch reads one batch with a ranged GET and checks it.
func (a *Agent) readBatch(ctx context.Context, e sequencer.IndexEntry) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a.metrics.storeReads.Add(1)
	b, err := a.store.Get(ctx, e.Object, e.Pos, e.Len)
	if err != nil {
		return nil, fmt.Errorf("read %s at %d+%d: %w", e.Object, e.Pos, e.Len, err)
	}
	if err := core.CheckLoaded(b, e); err != nil {
		return nil, err
	}
	return b, nil
}

// loadBatch reads a batch that is not cached, and returns it with the
// cached value it is a slice of, which the caller must release. It reads the
// whole data object once (single-flight, and cached whole), so that a
// consumer catching up costs about one GET per object, not one per batch: an
// object holds every partition's batches of one flush window. An object
// read from the store is checked, every batch's CRC, before it is trusted.
func (a *Agent) loadBatch(ctx context.Context, e sequencer.IndexEntry) ([]byte, *cache.Value, error) {
	if a.cfg.CacheBytes < wholeObjectsCached*int64(a.cfg.FlushBytes) {
		// A cache too small to keep a few whole objects would drop each
		// one before its next batch is read, and every batch would cost
		// a whole object: read just the batch.
		v, err := a.cache.Load(cache.Key(e.Object, e.Pos), func() ([]byte, error) { return a.readBatch(ctx, e) })
		if err != nil {
			return nil, nil, err
		}
		return v.Bytes(), v, nil
	}
	obj, err := a.cache.LoadOwned(cache.ObjectKey(e.Object), func() ([]byte, func([]byte), error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a.metrics.storeReads.Add(1)
		b, free, err := a.readObject(ctx, e.Object)
		if err == nil {
			err = core.CheckObject(e.Object, b)
		}
		if err != nil {
			if free != nil {
				free(b)
			}
			return nil, nil, fmt.Errorf("read %s: %w", e.Object, err)
		}
		return b, free, nil
	})
	if err != nil {
		return nil, nil, err
	}
	b, err := core.CheckEntry(obj.Bytes(), e)
	if err != nil {
		obj.Release()
		return nil, nil, err
	}
	return b, obj, nil
}

// readObject reads a whole object. Where the agent recycles flush buffers
// it reads into one, and returns the function that takes it back. An object
// under 1/bufferFillMin of a buffer (a light load's window) is kept in
// memory of its own size instead: the cache counts the memory a value
// holds, so small objects in whole buffers would fill it with a few of
// them, and a fetch holding many would hold a buffer for each.
func (a *Agent) readObject(ctx context.Context, key string) ([]byte, func([]byte), error) {
	if a.buffers == nil {
		b, err := a.store.Get(ctx, key, 0, -1)
		return b, nil, err
	}
	buf := a.buffers.get(a.cfg.FlushBytes)
	b, err := objectio.GetInto(ctx, a.store, key, buf)
	switch {
	case err != nil:
		a.buffers.put(buf)
		return nil, nil, err
	case !sameMemory(b, buf): // too large for it: read into memory of its own
		a.buffers.put(buf)
		return b, nil, nil
	case len(b) < cap(buf)/bufferFillMin:
		small := bytes.Clone(b)
		a.buffers.put(buf)
		return small, nil, nil
	}
	return b, a.buffers.put, nil
}

// sameMemory reports whether a and b start at the same byte.
func sameMemory(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:1][0] == &b[:1][0]
}
