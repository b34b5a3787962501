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
	Batches  [][]byte               // their patched bytes, filled by the caller
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
// entry (one whole batch, valid CRC, the right record count) and patches its
// offsets. Checking after the GET what was checked before the PUT catches a
// store that returns the wrong bytes.
func CheckLoaded(b []byte, e sequencer.IndexEntry) error {
	batch, err := codec.ParseBatch(b)
	if err != nil {
		return fmt.Errorf("stored batch %s@%d is damaged: %w", e.Object, e.Pos, err)
	}
	if batch.NumRecords() != e.Records {
		return fmt.Errorf("stored batch %s@%d has %d records, the index says %d", e.Object, e.Pos, batch.NumRecords(), e.Records)
	}
	Patch(b, e)
	return nil
}
