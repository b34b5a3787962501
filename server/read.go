package server

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// plan resolves the fetch under the replica's read lock.
func (a *Agent) plan(parts []*core.PartRead, maxBytes int64) (total int64, anyErr bool) {
	a.view(func(st *sequencer.State) { total, anyErr = core.PlanRead(st, parts, maxBytes, a.cfg.OtherAgents) })
	return total, anyErr
}

// cached fills every planned batch from the cache, and reports whether all
// of them were there (then no I/O is needed).
func (a *Agent) cached(parts []*core.PartRead) bool {
	f := batchFinder{a: a}
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
func (a *Agent) load(ctx context.Context, parts []*core.PartRead) error {
	f := batchFinder{a: a}
	for _, pr := range parts {
		pr.Batches = pr.Batches[:0]
		for _, e := range pr.Entries {
			b, ok := f.cached(e)
			if !ok {
				var err error
				if b, err = a.loadBatch(ctx, e); err != nil {
					return err
				}
				f.object = "" // look again: the object may be cached now
			}
			pr.Batches = append(pr.Batches, b)
		}
	}
	return nil
}

// batchFinder looks up one fetch's batches in the cache. Consecutive batches
// mostly lie in the same object (an object holds every partition's batches
// of one flush window), so it looks each object up once.
type batchFinder struct {
	a       *Agent
	object  string // the object looked up last
	data    []byte // its bytes, if cached whole
	written bool   // data is an object this agent wrote, so trusted
}

// cached returns a batch from the cache: a slice of an object this agent
// wrote, a slice of an object read whole before, or a batch read alone.
func (f *batchFinder) cached(e sequencer.IndexEntry) ([]byte, bool) {
	if e.Object != f.object {
		f.object, f.data, f.written = e.Object, nil, false
		if obj, ok := f.a.cache.Get(cache.WrittenKey(e.Object)); ok {
			f.data, f.written = obj, true
		} else if obj, ok := f.a.cache.Get(cache.ObjectKey(e.Object)); ok {
			f.data = obj
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
	return f.a.cache.Get(cache.Key(e.Object, e.Pos))
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

// loadBatch reads a batch that is not cached. It reads the whole data
// object once (single-flight, and cached whole), so that a consumer
// catching up costs about one GET per object, not one per batch: an object
// holds every partition's batches of one flush window. An object read from
// the store is checked, every batch's CRC, before it is trusted.
func (a *Agent) loadBatch(ctx context.Context, e sequencer.IndexEntry) ([]byte, error) {
	if a.cfg.CacheBytes < wholeObjectsCached*int64(a.cfg.FlushBytes) {
		// A cache too small to keep a few whole objects would drop each
		// one before its next batch is read, and every batch would cost
		// a whole object: read just the batch.
		return a.cache.Load(cache.Key(e.Object, e.Pos), func() ([]byte, error) { return a.readBatch(ctx, e) })
	}
	obj, err := a.cache.Load(cache.ObjectKey(e.Object), func() ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a.metrics.storeReads.Add(1)
		b, err := a.store.Get(ctx, e.Object, 0, -1)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", e.Object, err)
		}
		if err := core.CheckObject(e.Object, b); err != nil {
			return nil, err
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return core.CheckEntry(obj, e)
}
