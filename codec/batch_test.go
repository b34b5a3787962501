package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Field values testBatch writes, so tests can read them back.
const (
	testBaseTimestamp = int64(1_700_000_000_000)
	testProducerID    = int64(4242)
	testProducerEpoch = int16(3)
	testBaseSequence  = int32(17)
	testValueBytes    = 100
)

// testBatch encodes a real magic-2 RecordBatch of nrecords uncompressed
// records (100-byte values) with kmsg, and stamps its CRC-32C independently
// of the code under test. nrecords 0 gives an empty batch (lastOffsetDelta -1).
func testBatch(t testing.TB, nrecords int) []byte {
	t.Helper()
	return testBatchAttrs(t, nrecords, 0)
}

func testBatchAttrs(t testing.TB, nrecords int, attributes int16) []byte {
	t.Helper()
	var records []byte
	for i := range nrecords {
		rec := kmsg.NewRecord()
		rec.TimestampDelta64 = int64(i)
		rec.OffsetDelta = int32(i)
		rec.Key = fmt.Appendf(nil, "key-%d", i)
		rec.Value = bytes.Repeat([]byte{byte('a' + i%26)}, testValueBytes)
		rec.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}}
		// Length counts the bytes after itself; a zero length encodes in one byte.
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		records = rec.AppendTo(records)
	}
	rb := kmsg.NewRecordBatch()
	rb.FirstOffset = 0
	rb.Length = int32(BatchHeaderSize - 12 + len(records))
	rb.PartitionLeaderEpoch = -1
	rb.Magic = 2
	rb.Attributes = attributes
	rb.LastOffsetDelta = int32(nrecords - 1)
	rb.FirstTimestamp = testBaseTimestamp
	rb.MaxTimestamp = testBaseTimestamp + int64(max(nrecords-1, 0))
	rb.ProducerID = testProducerID
	rb.ProducerEpoch = testProducerEpoch
	rb.FirstSequence = testBaseSequence
	rb.NumRecords = int32(nrecords)
	rb.Records = records
	b := rb.AppendTo(nil)
	if len(b) != int(rb.Length)+12 {
		t.Fatalf("testBatch: encoded %d bytes, want batchLength %d + 12", len(b), rb.Length)
	}
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestParseBatchAcceptsValidBatchAndReadsFields(t *testing.T) {
	for _, n := range []int{1, 2, 10, 100} {
		t.Run(fmt.Sprintf("records=%d", n), func(t *testing.T) {
			raw := testBatch(t, n)
			b, err := ParseBatch(raw)
			if err != nil {
				t.Fatalf("ParseBatch of a valid %d-record batch: %v, want nil", n, err)
			}
			checks := []struct {
				name      string
				got, want any
			}{
				{"BaseOffset", b.BaseOffset(), int64(0)},
				{"PartitionLeaderEpoch", b.PartitionLeaderEpoch(), int32(-1)},
				{"NumRecords", b.NumRecords(), int32(n)},
				{"LastOffsetDelta", b.LastOffsetDelta(), int32(n - 1)},
				{"Attributes", b.Attributes(), int16(0)},
				{"BaseTimestamp", b.BaseTimestamp(), testBaseTimestamp},
				{"MaxTimestamp", b.MaxTimestamp(), testBaseTimestamp + int64(n-1)},
				{"ProducerID", b.ProducerID(), testProducerID},
				{"ProducerEpoch", b.ProducerEpoch(), testProducerEpoch},
				{"BaseSequence", b.BaseSequence(), testBaseSequence},
				{"Compression", b.Compression(), int8(0)},
				{"TimestampType", b.TimestampType(), int8(0)},
				{"IsTransactional", b.IsTransactional(), false},
				{"IsControl", b.IsControl(), false},
				{"len", len(b), len(raw)},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if &b[0] != &raw[0] {
				t.Errorf("ParseBatch copied the batch; want a view aliasing the input")
			}
		})
	}
}

func TestBatchAttributeBits(t *testing.T) {
	tests := []struct {
		name          string
		attributes    int16
		compression   int8
		timestampType int8
		transactional bool
		control       bool
	}{
		{"none", 0x00, 0, 0, false, false},
		{"gzip", 0x01, 1, 0, false, false},
		{"zstd", 0x04, 4, 0, false, false},
		{"log append time", 0x08, 0, 1, false, false},
		{"transactional", 0x10, 0, 0, true, false},
		{"control", 0x20, 0, 0, false, true},
		{"transactional control lz4", 0x33, 3, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ParseBatch(testBatchAttrs(t, 1, tt.attributes))
			if err != nil {
				t.Fatalf("ParseBatch: %v, want nil", err)
			}
			if got := b.Compression(); got != tt.compression {
				t.Errorf("Compression() = %d, want %d", got, tt.compression)
			}
			if got := b.TimestampType(); got != tt.timestampType {
				t.Errorf("TimestampType() = %d, want %d", got, tt.timestampType)
			}
			if got := b.IsTransactional(); got != tt.transactional {
				t.Errorf("IsTransactional() = %v, want %v", got, tt.transactional)
			}
			if got := b.IsControl(); got != tt.control {
				t.Errorf("IsControl() = %v, want %v", got, tt.control)
			}
		})
	}
}

// restamp recomputes the CRC after a test edits a covered field, so the
// test reaches the check it means to exercise.
func restamp(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func TestParseBatchRejectsMalformedBatches(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		want   error
	}{
		{"empty input", func(b []byte) []byte { return nil }, ErrBatchTooShort},
		{"shorter than a header", func(b []byte) []byte { return b[:BatchHeaderSize-1] }, ErrBatchTooShort},
		{"records truncated", func(b []byte) []byte { return b[:len(b)-1] }, ErrBatchTooShort},
		{"trailing byte", func(b []byte) []byte { return append(b, 0) }, ErrBatchCount},
		{"two batches", func(b []byte) []byte { return append(b, b...) }, ErrBatchCount},
		{"magic 1", func(b []byte) []byte { b[16] = 1; return b }, ErrBadMagic},
		{"magic 3", func(b []byte) []byte { b[16] = 3; return b }, ErrBadMagic},
		{"batch length below header", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:], 48)
			return b
		}, ErrBadLength},
		{"negative batch length", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[8:], 0xffffffff)
			return b
		}, ErrBadLength},
		{"flipped byte in records", func(b []byte) []byte { b[len(b)-5] ^= 0x01; return b }, ErrBadCRC},
		{"flipped byte in attributes", func(b []byte) []byte { b[22] ^= 0x01; return b }, ErrBadCRC},
		{"flipped byte in crc", func(b []byte) []byte { b[17] ^= 0x80; return b }, ErrBadCRC},
		{"negative records count", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[57:], 0xffffffff)
			binary.BigEndian.PutUint32(b[23:], 0xfffffffe)
			return restamp(b)
		}, ErrBadRecordCount},
		{"lastOffsetDelta disagrees with count", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[23:], 5)
			return restamp(b)
		}, ErrBadRecordCount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.mutate(testBatch(t, 3))
			b, err := ParseBatch(raw)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseBatch = %v, want %v", err, tt.want)
			}
			if b != nil {
				t.Errorf("ParseBatch returned a %d-byte batch with an error; want nil", len(b))
			}
		})
	}
}

func TestParseBatchRejectsEmptyBatch(t *testing.T) {
	// Kafka refuses a produced batch with no records: it would take no offsets.
	if _, err := ParseBatch(testBatch(t, 0)); !errors.Is(err, ErrBadRecordCount) {
		t.Fatalf("ParseBatch of an empty batch = %v, want %v", err, ErrBadRecordCount)
	}
}

func TestServedHeaderKeepsBatchValidAndReadsBack(t *testing.T) {
	tests := []struct {
		baseOffset  int64
		leaderEpoch int32
	}{
		{0, 0},
		{1, 7},
		{1 << 40, 123456},
		{9_223_372_036_854_775_000, 2_147_483_647},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("offset=%d,epoch=%d", tt.baseOffset, tt.leaderEpoch), func(t *testing.T) {
			raw := testBatch(t, 5)
			orig := bytes.Clone(raw)
			b, err := ParseBatch(raw)
			if err != nil {
				t.Fatalf("ParseBatch of the stored batch: %v", err)
			}
			served := append(b.AppendServedHeader(nil, tt.baseOffset, tt.leaderEpoch), raw[ServedHeaderSize:]...)
			if !bytes.Equal(raw, orig) {
				t.Fatalf("AppendServedHeader wrote into the stored batch")
			}
			again, err := ParseBatch(served)
			if err != nil {
				t.Fatalf("ParseBatch of the served batch = %v, want nil: the CRC must not cover the rewritten fields", err)
			}
			if got := again.BaseOffset(); got != tt.baseOffset {
				t.Errorf("BaseOffset() = %d, want %d", got, tt.baseOffset)
			}
			if got := again.PartitionLeaderEpoch(); got != tt.leaderEpoch {
				t.Errorf("PartitionLeaderEpoch() = %d, want %d", got, tt.leaderEpoch)
			}
			if !bytes.Equal(served[8:12], orig[8:12]) || !bytes.Equal(served[16:], orig[16:]) {
				t.Errorf("the served batch differs outside baseOffset and partitionLeaderEpoch")
			}
			// kmsg, an independent decoder, must agree.
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(served); err != nil {
				t.Fatalf("kmsg.RecordBatch.ReadFrom of the served batch: %v", err)
			}
			if rb.FirstOffset != tt.baseOffset || rb.PartitionLeaderEpoch != tt.leaderEpoch {
				t.Errorf("kmsg reads offset %d epoch %d, want %d %d",
					rb.FirstOffset, rb.PartitionLeaderEpoch, tt.baseOffset, tt.leaderEpoch)
			}
		})
	}
}

func TestSplitBatchesWalksWholeBatchesAndIgnoresATrailingPartialOne(t *testing.T) {
	one, three, ten := testBatch(t, 1), testBatch(t, 3), testBatch(t, 10)
	set := bytes.Join([][]byte{one, three, ten}, nil)
	badMagic := bytes.Clone(three)
	badMagic[offMagic] = 1
	badLength := bytes.Clone(three)
	binary.BigEndian.PutUint32(badLength[8:], 10)
	corrupt := bytes.Clone(three)
	corrupt[len(corrupt)-1] ^= 0xff

	tests := []struct {
		name         string
		in           []byte
		wantCounts   []int32
		wantConsumed int
		wantErr      error
	}{
		{"empty set", nil, nil, 0, nil},
		{"one batch", one, []int32{1}, len(one), nil},
		{"three batches", set, []int32{1, 3, 10}, len(set), nil},
		{"trailing partial batch is ignored", set[:len(set)-1], []int32{1, 3}, len(one) + len(three), nil},
		{"trailing partial length field is ignored", append(bytes.Clone(one), 0, 0, 0), []int32{1}, len(one), nil},
		{"crc is not checked", corrupt, []int32{3}, len(corrupt), nil},
		{"bad magic stops the walk", bytes.Join([][]byte{one, badMagic}, nil), []int32{1}, len(one), ErrBadMagic},
		{"impossible length stops the walk", bytes.Join([][]byte{one, badLength}, nil), []int32{1}, len(one), ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counts []int32
			consumed, err := SplitBatches(tt.in, func(b Batch) error {
				counts = append(counts, b.NumRecords())
				return nil
			})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("SplitBatches error = %v, want %v", err, tt.wantErr)
			}
			if consumed != tt.wantConsumed {
				t.Errorf("SplitBatches consumed %d bytes, want %d", consumed, tt.wantConsumed)
			}
			if fmt.Sprint(counts) != fmt.Sprint(tt.wantCounts) {
				t.Errorf("SplitBatches saw batches with counts %v, want %v", counts, tt.wantCounts)
			}
		})
	}
}

func TestSplitBatchesStopsOnCallbackError(t *testing.T) {
	one := testBatch(t, 1)
	set := bytes.Join([][]byte{one, one, one}, nil)
	stop := errors.New("stop")
	calls := 0
	consumed, err := SplitBatches(set, func(Batch) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || consumed != len(one) || calls != 2 {
		t.Fatalf("SplitBatches = (%d, %v) after %d calls, want (%d, %v) after 2 calls", consumed, err, calls, len(one), stop)
	}
}

func TestSplitBatchesYieldsBatchesThatParse(t *testing.T) {
	set := bytes.Join([][]byte{testBatch(t, 2), testBatch(t, 7)}, nil)
	_, err := SplitBatches(set, func(b Batch) error {
		if cap(b) != len(b) {
			t.Errorf("batch has cap %d > len %d; an append could clobber the next batch", cap(b), len(b))
		}
		_, err := ParseBatch(b)
		return err
	})
	if err != nil {
		t.Fatalf("a batch from SplitBatches failed ParseBatch: %v", err)
	}
}

func TestBatchHotPathsDoNotAllocate(t *testing.T) {
	raw := testBatch(t, 10)
	b, err := ParseBatch(raw)
	if err != nil {
		t.Fatal(err)
	}
	header := make([]byte, 0, ServedHeaderSize)
	tests := []struct {
		name string
		fn   func()
	}{
		{"ParseBatch", func() { _, _ = ParseBatch(raw) }},
		{"ParseBatch error path", func() { _, _ = ParseBatch(raw[:len(raw)-1]) }},
		{"AppendServedHeader", func() { _ = b.AppendServedHeader(header[:0], 12345, 6) }},
		{"SplitBatches", func() { _, _ = SplitBatches(raw, func(Batch) error { return nil }) }},
	}
	for _, tt := range tests {
		if allocs := testing.AllocsPerRun(100, tt.fn); allocs != 0 {
			t.Errorf("%s allocates %v times per call, want 0", tt.name, allocs)
		}
	}
}

func BenchmarkValidateAndServe(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			raw := testBatch(b, n)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			var offset int64
			header := make([]byte, 0, ServedHeaderSize)
			for b.Loop() {
				batch, err := ParseBatch(raw)
				if err != nil {
					b.Fatal(err)
				}
				header = batch.AppendServedHeader(header[:0], offset, 1)
				offset += int64(n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
		})
	}
}

func TestIsOneBatch(t *testing.T) {
	one := testBatch(t, 3)
	two := append(bytes.Clone(one), one...)
	badMagic := bytes.Clone(one)
	badMagic[offMagic] = 1
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"one batch", one, true},
		{"two batches", two, false},
		{"cut short", one[:len(one)-1], false},
		{"a byte past it", append(bytes.Clone(one), 0), false},
		{"header only", one[:BatchHeaderSize], false},
		{"shorter than a header", one[:BatchHeaderSize-1], false},
		{"bad magic", badMagic, false},
	} {
		if got := IsOneBatch(tc.b); got != tc.want {
			t.Errorf("%s: IsOneBatch = %v, want %v", tc.name, got, tc.want)
		}
		n := 0
		consumed, err := SplitBatches(tc.b, func(Batch) error { n++; return nil })
		if split := err == nil && n == 1 && consumed == len(tc.b); split != tc.want {
			t.Errorf("%s: SplitBatches finds one whole batch: %v, want %v", tc.name, split, tc.want)
		}
	}
}
