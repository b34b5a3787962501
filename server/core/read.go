package core

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
)

// PartRead is one partition of a fetch: where to read, and what was found.
type PartRead struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int32

	Err      int16
	HWM      int64
	LogStart int64
	Entries  []sequencer.IndexEntry // the batches to return
	Batches  [][]byte               // their stored bytes, filled by the caller; served behind AppendServedHeader
}

// PlanRead resolves every partition's offset to index entries, within the
// per-partition and total byte limits. As in Kafka, the first batch found is
// returned even when it is larger than the limits, so that a consumer always
// makes progress. It returns the bytes planned and whether any partition has
// an error (a fetch with an error does not wait).
//
// mayLag says the replica may be behind what the client has already seen
// from another agent: then an offset past the high watermark is
// OFFSET_NOT_AVAILABLE (retry), not OFFSET_OUT_OF_RANGE (reset). A client
// never sees a high watermark go back.
func PlanRead(st *sequencer.State, parts []*PartRead, maxBytes int64, mayLag bool) (total int64, anyErr bool) {
	for _, pr := range parts {
		pr.Entries, pr.Err = pr.Entries[:0], 0
		p := st.Partition(pr.Topic, pr.Partition)
		if p == nil {
			pr.Err = kerr.UnknownTopicOrPartition.Code
			anyErr = true
			continue
		}
		pr.HWM, pr.LogStart = p.Next, p.LogStart
		switch {
		case pr.Offset > p.Next && mayLag:
			pr.Err = kerr.OffsetNotAvailable.Code
		case pr.Offset < p.LogStart || pr.Offset > p.Next:
			pr.Err = kerr.OffsetOutOfRange.Code
		}
		if pr.Err != 0 {
			anyErr = true
			continue
		}
		var planned int64
		for i := p.Find(pr.Offset); i < len(p.Index); i++ {
			e := p.Index[i]
			if total > 0 && (planned+e.Len > int64(pr.MaxBytes) || total+e.Len > maxBytes) {
				break
			}
			pr.Entries = append(pr.Entries, e)
			planned += e.Len
			total += e.Len
		}
	}
	return total, anyErr
}

// CheckLoaded verifies a batch read back from the store against its index
// entry: one whole batch, valid CRC, the right record count. Checking after
// the GET what was checked before the PUT catches a store that returns the
// wrong bytes.
func CheckLoaded(b []byte, e sequencer.IndexEntry) error {
	batch, err := codec.ParseBatch(b)
	if err != nil {
		return fmt.Errorf("stored batch %s@%d is damaged: %w", e.Object, e.Pos, err)
	}
	return checkCount(batch, e)
}

// CheckObject verifies a whole data object read back from the store: an
// object is its batches back to back, and every one must be whole with a
// valid CRC. A checked object's batches are then served with CheckEntry's
// cheaper test.
func CheckObject(key string, obj []byte) error {
	consumed, err := codec.SplitBatches(obj, func(b codec.Batch) error {
		_, err := codec.ParseBatch(b)
		return err
	})
	if err == nil && consumed != len(obj) {
		err = codec.ErrBatchTooShort
	}
	if err != nil {
		return fmt.Errorf("stored object %s is damaged at %d: %w", key, consumed, err)
	}
	return nil
}

// CheckEntry returns the batch an index entry places in an object that
// passed CheckObject, after checking that the entry lands on one whole
// batch with the right record count.
func CheckEntry(obj []byte, e sequencer.IndexEntry) ([]byte, error) {
	if e.Pos < 0 || e.Len < codec.BatchHeaderSize || e.Pos+e.Len > int64(len(obj)) {
		return nil, fmt.Errorf("object %s has %d bytes; the index places a batch at %d+%d", e.Object, len(obj), e.Pos, e.Len)
	}
	b := obj[e.Pos : e.Pos+e.Len : e.Pos+e.Len]
	if !codec.IsOneBatch(b) {
		return nil, fmt.Errorf("object %s: the index places a batch at %d+%d, which is not one whole batch", e.Object, e.Pos, e.Len)
	}
	if err := checkCount(codec.Batch(b), e); err != nil {
		return nil, err
	}
	return b, nil
}

func checkCount(b codec.Batch, e sequencer.IndexEntry) error {
	if b.NumRecords() != e.Records {
		return fmt.Errorf("stored batch %s@%d has %d records, the index says %d", e.Object, e.Pos, b.NumRecords(), e.Records)
	}
	return nil
}
