package server

import (
	"bytes"
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
	all := true
	for _, pr := range parts {
		pr.Batches = pr.Batches[:0]
		for _, e := range pr.Entries {
			b, ok := a.cachedBatch(e)
			if !ok {
				all = false
				break
			}
			pr.Batches = append(pr.Batches, b)
		}
	}
	return all
}

// load fills every planned batch, reading misses from the store through the
// single-flight cache.
func (a *Agent) load(ctx context.Context, parts []*core.PartRead) error {
	for _, pr := range parts {
		pr.Batches = pr.Batches[:0]
		for _, e := range pr.Entries {
			b, err := a.loadBatch(ctx, e)
			if err != nil {
				return err
			}
			pr.Batches = append(pr.Batches, b)
		}
	}
	return nil
}

// cachedBatch returns a batch from the cache: a slice of an object this
// agent wrote, or a batch loaded from the store before.
func (a *Agent) cachedBatch(e sequencer.IndexEntry) ([]byte, bool) {
	if obj, ok := a.cache.Get(cache.WrittenKey(e.Object)); ok && e.Pos+e.Len <= int64(len(obj)) {
		return obj[e.Pos : e.Pos+e.Len : e.Pos+e.Len], true
	}
	return a.cache.Get(cache.Key(e.Object, e.Pos))
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

// loadBatch returns one batch's bytes, patched with its offset. On a miss
// it reads the whole data object once (single-flight, and cached itself), so
// that a consumer catching up costs about one GET per object, not one per
// batch: an object holds every partition's batches of one flush window.
// A batch read from the store is checked against its CRC before it is
// trusted.
func (a *Agent) loadBatch(ctx context.Context, e sequencer.IndexEntry) ([]byte, error) {
	if b, ok := a.cachedBatch(e); ok {
		return b, nil
	}
	return a.cache.Load(cache.Key(e.Object, e.Pos), func() ([]byte, error) {
		if a.cfg.CacheBytes < wholeObjectsCached*int64(a.cfg.FlushBytes) {
			// A cache too small to keep a few whole objects would drop
			// each one before its next batch is read, and every batch
			// would cost a whole object: read just the batch.
			return a.readBatch(ctx, e)
		}
		obj, err := a.cache.Load(cache.ObjectKey(e.Object), func() ([]byte, error) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			a.metrics.storeReads.Add(1)
			b, err := a.store.Get(ctx, e.Object, 0, -1)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", e.Object, err)
			}
			return b, nil
		})
		if err != nil {
			return nil, err
		}
		if e.Pos+e.Len > int64(len(obj)) {
			return nil, fmt.Errorf("object %s has %d bytes; the index places a batch at %d+%d", e.Object, len(obj), e.Pos, e.Len)
		}
		// A copy: the cached object is shared, and patching is per batch.
		b := bytes.Clone(obj[e.Pos : e.Pos+e.Len])
		if err := core.CheckLoaded(b, e); err != nil {
			return nil, err
		}
		return b, nil
	})
}
