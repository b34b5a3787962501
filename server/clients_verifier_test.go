package server

import (
	"testing"
	"time"
)

// The client tests are only as good as their verifier: each way a broker
// can get records wrong must show up as a problem of the matching kind, and
// a faithful delivery must show none.
func TestClientVerifierReportsLossDuplicatesDisorderAndDamage(t *testing.T) {
	// faithful returns a plan acknowledged at dense offsets, the matching
	// high watermarks, and a delivery of exactly those records.
	faithful := func() ([]*plannedRecord, map[int32]int64, []consumedRecord) {
		plan := planRecords(400, clientTestCodecs, clientTestPartitions, time.Now())
		ends := map[int32]int64{}
		var got []consumedRecord
		for _, r := range plan {
			off := ends[r.Partition]
			r.acked, r.ackedTimes, r.ackedOff = true, 1, off
			got = append(got, consumedRecord{Partition: r.Partition, Offset: off, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
			ends[r.Partition]++
		}
		return plan, ends, got
	}
	for _, tc := range []struct {
		name   string
		damage func(plan []*plannedRecord, ends map[int32]int64, got []consumedRecord) []consumedRecord
		kind   string // the problem kind it must cause; "" for none
	}{
		{"faithful delivery", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord { return got }, ""},
		{"last record lost", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			return got[:len(got)-1]
		}, "lost"},
		{"record delivered twice", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			return append(got, got[3])
		}, "duplicate"},
		{"two records of a partition swapped", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[0], got[clientTestPartitions] = got[clientTestPartitions], got[0]
			return got
		}, "offset order"},
		{"offset gap", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[len(got)-1].Offset++
			return got
		}, "offset order"},
		{"header dropped", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[5].Headers = got[5].Headers[:2]
			return got
		}, "field mismatch"},
		{"timestamp off by 1ms", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[5].Timestamp = got[5].Timestamp.Add(time.Millisecond)
			return got
		}, "field mismatch"},
		{"value changed", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[5].Value = []byte("x")
			return got
		}, "field mismatch"},
		{"read at another offset than acknowledged", func(plan []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			plan[9].ackedOff = 77
			return got
		}, "field mismatch"},
		{"high watermark past the records", func(_ []*plannedRecord, ends map[int32]int64, got []consumedRecord) []consumedRecord {
			ends[2]++
			return got
		}, "high watermark"},
		{"record not planned", func(_ []*plannedRecord, _ map[int32]int64, got []consumedRecord) []consumedRecord {
			got[0].Key = []byte("stranger")
			return got
		}, "unknown record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, ends, got := faithful()
			p := checkConsumed(plan, ends, tc.damage(plan, ends, got))
			if tc.kind == "" {
				if len(p.kinds) != 0 {
					t.Fatalf("want no problems, got %v", p.byKind)
				}
				return
			}
			if len(p.byKind[tc.kind]) == 0 {
				t.Fatalf("want a %q problem, got %v", tc.kind, p.byKind)
			}
		})
	}
}
