// Package codectest builds real RecordBatches for tests and benchmarks.
package codectest

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BatchSpec describes a batch to build. Zero values give a plain,
// non-idempotent batch.
type BatchSpec struct {
	Records       int
	ValueBytes    int
	ProducerID    int64 // 0 means -1 (not idempotent)
	ProducerEpoch int16
	BaseSequence  int32
	BaseTimestamp int64
	Values        [][]byte // if set, the records' values (and Records is len(Values))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch encodes an uncompressed RecordBatch (magic 2) with a valid CRC.
// Record i has key "key-i", a value of ValueBytes bytes and one header.
func Batch(s BatchSpec) []byte {
	if s.ProducerID == 0 {
		s.ProducerID, s.ProducerEpoch, s.BaseSequence = -1, -1, -1
	}
	if s.Values != nil {
		s.Records = len(s.Values)
	}
	var records []byte
	value := make([]byte, s.ValueBytes)
	for i := 0; i < s.Records; i++ {
		for j := range value {
			value[j] = byte('a' + (i+j)%26)
		}
		v := value
		if s.Values != nil {
			v = s.Values[i]
		}
		rec := kmsg.NewRecord()
		rec.TimestampDelta64 = int64(i)
		rec.OffsetDelta = int32(i)
		rec.Key = fmt.Appendf(nil, "key-%d", i)
		rec.Value = v
		rec.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // counts the bytes after itself
		records = rec.AppendTo(records)
	}
	rb := kmsg.NewRecordBatch()
	rb.Length = int32(61 - 12 + len(records))
	rb.PartitionLeaderEpoch = -1
	rb.Magic = 2
	rb.LastOffsetDelta = int32(s.Records - 1)
	rb.FirstTimestamp = s.BaseTimestamp
	rb.MaxTimestamp = s.BaseTimestamp + int64(max(s.Records-1, 0))
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = s.ProducerID, s.ProducerEpoch, s.BaseSequence
	rb.NumRecords = int32(s.Records)
	rb.Records = records
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}
