package server

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
)

// partRead is one partition of a fetch: where to read, and what was found.
type partRead struct {
	topic        string
	partition    int32
	offset       int64
	maxBytes     int32
	err          int16
	hwm          int64
	logStart     int64
	entries      []sequencer.IndexEntry
	batches      [][]byte // patched batch bytes, filled by load
	bytesPlanned int64
}

// plan resolves every partition's offset to index entries, within the
// per-partition and total byte limits. As in Kafka, the first batch found is
// returned even when it is larger than the limits, so that a consumer can
// always make progress. It returns the bytes planned and whether any
// partition has an error (a fetch with an error does not wait).
func (a *Agent) plan(parts []*partRead, maxBytes int64) (total int64, anyErr bool) {
	a.view(func(st *sequencer.State) {
		for _, pr := range parts {
			pr.entries, pr.bytesPlanned, pr.err = pr.entries[:0], 0, 0
			p := st.Partition(pr.topic, pr.partition)
			if p == nil {
				pr.err = kerr.UnknownTopicOrPartition.Code
				anyErr = true
				continue
			}
			pr.hwm, pr.logStart = p.Next, p.LogStart
			if pr.offset < p.LogStart || pr.offset > p.Next {
				pr.err = kerr.OffsetOutOfRange.Code
				anyErr = true
				continue
			}
			for i := p.Find(pr.offset); i < len(p.Index); i++ {
				e := p.Index[i]
				first := total == 0
				if !first && (pr.bytesPlanned+e.Len > int64(pr.maxBytes) || total+e.Len > maxBytes) {
					break
				}
				pr.entries = append(pr.entries, e)
				pr.bytesPlanned += e.Len
				total += e.Len
			}
		}
	})
	return total, anyErr
}

// cached fills every planned batch from the cache, and reports whether all
// of them were there (then no I/O is needed).
func (a *Agent) cached(parts []*partRead) bool {
	all := true
	for _, pr := range parts {
		pr.batches = pr.batches[:0]
		for _, e := range pr.entries {
			b, ok := a.cache.Get(cache.Key(e.Object, e.Pos))
			if !ok {
				all = false
				break
			}
			pr.batches = append(pr.batches, b)
		}
	}
	return all
}

// load fills every planned batch, reading misses from the store through the
// single-flight cache.
func (a *Agent) load(ctx context.Context, parts []*partRead) error {
	for _, pr := range parts {
		pr.batches = pr.batches[:0]
		for _, e := range pr.entries {
			b, err := a.loadBatch(ctx, e)
			if err != nil {
				return err
			}
			pr.batches = append(pr.batches, b)
		}
	}
	return nil
}

// loadBatch returns one batch's bytes, patched with its offset. A batch read
// from the store is checked against its CRC before it is trusted.
func (a *Agent) loadBatch(ctx context.Context, e sequencer.IndexEntry) ([]byte, error) {
	return a.cache.Load(cache.Key(e.Object, e.Pos), func() ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		a.metrics.storeReads.Add(1)
		b, err := a.store.Get(ctx, e.Object, e.Pos, e.Len)
		if err != nil {
			return nil, fmt.Errorf("read %s@%d: %w", e.Object, e.Pos, err)
		}
		batch, err := codec.ParseBatch(b)
		if err != nil || batch.NumRecords() != e.Records {
			return nil, fmt.Errorf("stored batch %s@%d does not match the index: %v", e.Object, e.Pos, err)
		}
		batch.Patch(e.BaseOffset, 0)
		return b, nil
	})
}
