package codec

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// BatchHeaderSize is the size of a magic-2 RecordBatch header, up to and
// including the records count.
const BatchHeaderSize = 61

// Field offsets in a magic-2 RecordBatch.
const (
	offBaseOffset       = 0
	offBatchLength      = 8
	offLeaderEpoch      = 12
	offMagic            = 16
	offCRC              = 17
	offAttributes       = 21 // the CRC covers from here to the end
	offLastOffsetDelta  = 23
	offBaseTimestamp    = 27
	offMaxTimestamp     = 35
	offProducerID       = 43
	offProducerEpoch    = 51
	offBaseSequence     = 53
	offNumRecords       = 57
	lengthPrefixedBytes = offBatchLength + 4 // bytes not counted by batchLength

	batchMagic = 2
)

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Batch is a view over exactly one whole magic-2 RecordBatch. It aliases the
// bytes it was made from. Accessors assume len(b) >= BatchHeaderSize, which
// ParseBatch and SplitBatches guarantee.
type Batch []byte

var (
	// ErrBatchTooShort means the bytes end before the batch header or
	// before the length the batch declares.
	ErrBatchTooShort = errors.New("codec: record batch truncated")
	// ErrBadMagic means the batch is not magic 2.
	ErrBadMagic = errors.New("codec: record batch magic is not 2")
	// ErrBadLength means the declared batch length is shorter than a header.
	ErrBadLength = errors.New("codec: record batch length invalid")
	// ErrBadCRC means the CRC-32C over attributes..end does not match.
	ErrBadCRC = errors.New("codec: record batch crc mismatch")
	// ErrBatchCount means the bytes are not exactly one batch: there are
	// bytes after the batch.
	ErrBatchCount = errors.New("codec: not exactly one record batch")
	// ErrBadRecordCount means the records count is not positive or does
	// not agree with lastOffsetDelta (Kafka requires lastOffsetDelta ==
	// count-1 on produce).
	ErrBadRecordCount = errors.New("codec: record batch count inconsistent")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ParseBatch validates that b holds exactly one RecordBatch, as it arrives
// in a Produce request: length fields consistent (batchLength+12 ==
// len(b)), magic 2, CRC-32C ok, records count > 0 and lastOffsetDelta ==
// count-1. It reads only the header and checksums the rest; records are
// not decoded.
//
// An empty batch (count 0) is rejected, as Kafka does on produce: it would
// take no offsets, so nothing could ever be acknowledged for it.
func ParseBatch(b []byte) (Batch, error) {
	if len(b) < BatchHeaderSize {
		return nil, ErrBatchTooShort
	}
	if err := checkLengthAndMagic(b); err != nil {
		return nil, err
	}
	total := batchTotal(b)
	if total > len(b) {
		return nil, ErrBatchTooShort
	}
	if total < len(b) {
		return nil, ErrBatchCount
	}
	if crc32.Checksum(b[offAttributes:], castagnoli) != binary.BigEndian.Uint32(b[offCRC:]) {
		return nil, ErrBadCRC
	}
	batch := Batch(b)
	count := batch.NumRecords()
	if count <= 0 || batch.LastOffsetDelta() != count-1 {
		return nil, ErrBadRecordCount
	}
	return batch, nil
}

// checkLengthAndMagic checks the header of a batch whose first
// BatchHeaderSize bytes are present.
func checkLengthAndMagic(b []byte) error {
	if int8(b[offMagic]) != batchMagic {
		return ErrBadMagic
	}
	if int32(binary.BigEndian.Uint32(b[offBatchLength:])) < BatchHeaderSize-lengthPrefixedBytes {
		return ErrBadLength
	}
	return nil
}

// IsOneBatch reports whether b holds exactly one batch by its header (the
// magic, and a length that covers b): what SplitBatches would find in b,
// without walking it. The CRC is not checked.
func IsOneBatch(b []byte) bool {
	return len(b) >= BatchHeaderSize && checkLengthAndMagic(b) == nil && batchTotal(b) == len(b)
}

// batchTotal is the whole size of the batch starting at b, prefix included.
// b must hold at least the length field, and the length must be
// non-negative.
func batchTotal(b []byte) int {
	return int(binary.BigEndian.Uint32(b[offBatchLength:])) + lengthPrefixedBytes
}

// SplitBatches walks a record set with possibly several batches (as in a
// Fetch response or a stored object) and calls fn for each whole batch
// without validating the CRC. A trailing partial batch is allowed and
// ignored, as fetch responses may end with one; consumed is the number of
// bytes in whole batches, so consumed < len(b) tells the caller the set was
// cut short. A whole batch with a bad magic or an impossible length stops
// the walk with ErrBadMagic or ErrBadLength, and an error from fn stops it
// and is returned as is; consumed then counts the batches before it.
func SplitBatches(b []byte, fn func(Batch) error) (consumed int, err error) {
	for len(b)-consumed >= lengthPrefixedBytes {
		rest := b[consumed:]
		length := int32(binary.BigEndian.Uint32(rest[offBatchLength:]))
		if length < BatchHeaderSize-lengthPrefixedBytes {
			return consumed, ErrBadLength
		}
		total := int(length) + lengthPrefixedBytes
		if total > len(rest) {
			break // trailing partial batch
		}
		if int8(rest[offMagic]) != batchMagic {
			return consumed, ErrBadMagic
		}
		if err := fn(Batch(rest[:total:total])); err != nil {
			return consumed, err
		}
		consumed += total
	}
	return consumed, nil
}

// ServedHeaderSize is how much of a batch's front a broker rewrites when it
// serves the batch: the base offset, the batch length (unchanged) and the
// partition leader epoch, the fields before the magic byte. The CRC covers
// none of them.
const ServedHeaderSize = offMagic

// AppendServedHeader appends b's first ServedHeaderSize bytes as a broker
// serves them, with baseOffset and leaderEpoch in place of the stored ones.
// The broker writes this, then b[ServedHeaderSize:]; it never writes into b,
// so stored bytes stay as the producer sent them and may be shared.
func (b Batch) AppendServedHeader(dst []byte, baseOffset int64, leaderEpoch int32) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(baseOffset)) // offBaseOffset
	dst = append(dst, b[offBatchLength:offLeaderEpoch]...)
	return binary.BigEndian.AppendUint32(dst, uint32(leaderEpoch))
}

// BaseOffset is the offset of the first record.
func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }

// PartitionLeaderEpoch is the leader epoch stamped by the broker.
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}

// Attributes is the raw attributes field.
func (b Batch) Attributes() int16 { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }

// LastOffsetDelta is the offset of the last record relative to BaseOffset.
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
}

// BaseTimestamp is the timestamp of the first record.
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }

// MaxTimestamp is the largest record timestamp in the batch.
func (b Batch) MaxTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }

// ProducerID is the idempotent producer id, or -1.
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }

// ProducerEpoch is the idempotent producer epoch, or -1.
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }

// BaseSequence is the sequence number of the first record, or -1.
func (b Batch) BaseSequence() int32 { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }

// NumRecords is the records count from the header.
func (b Batch) NumRecords() int32 { return int32(binary.BigEndian.Uint32(b[offNumRecords:])) }

// Compression is the codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (b Batch) Compression() int8 { return int8(b.Attributes() & attrCompressionMask) }

// TimestampType is 0 for CreateTime and 1 for LogAppendTime.
func (b Batch) TimestampType() int8 {
	if b.Attributes()&attrTimestampType != 0 {
		return 1
	}
	return 0
}

// IsTransactional reports whether the batch belongs to a transaction.
func (b Batch) IsTransactional() bool { return b.Attributes()&attrTransactional != 0 }

// IsControl reports whether the batch holds a control record (commit or
// abort marker).
func (b Batch) IsControl() bool { return b.Attributes()&attrControl != 0 }
