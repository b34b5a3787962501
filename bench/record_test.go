package bench

import (
	"errors"
	"testing"
)

func TestLoadRecordRoundTripsItsHeader(t *testing.T) {
	v := make([]byte, 100)
	newPayloads(1).fill(v[HeaderBytes:])
	want := RecordHeader{Writer: 7<<16 | 3, Seq: 12345, SentUnixNano: 1_700_000_000_123_456_789}
	EncodeValue(v, want)
	got, err := DecodeValue(v)
	if err != nil || got != want {
		t.Fatalf("decoded %+v, %v; want %+v, nil", got, err, want)
	}
}

func TestLoadRecordChecksumCatchesAnyFlippedBit(t *testing.T) {
	v := make([]byte, 64)
	newPayloads(2).fill(v[HeaderBytes:])
	EncodeValue(v, RecordHeader{Writer: 1, Seq: 2, SentUnixNano: 3})
	// Every bit after the magic: the checksum itself, the header fields
	// and the payload.
	for bit := 4 * 8; bit < len(v)*8; bit++ {
		v[bit/8] ^= 1 << (bit % 8)
		if _, err := DecodeValue(v); !errors.Is(err, errChecksum) {
			t.Fatalf("bit %d flipped: got %v, want errChecksum", bit, err)
		}
		v[bit/8] ^= 1 << (bit % 8)
	}
}

func TestValuesWithoutTheHeaderAreForeign(t *testing.T) {
	for _, v := range [][]byte{nil, []byte("hello"), make([]byte, 100)} {
		if _, err := DecodeValue(v); !errors.Is(err, errForeign) {
			t.Errorf("DecodeValue(%q): got %v, want errForeign", v, err)
		}
	}
}

func TestPayloadsDoNotRepeatWithinABatch(t *testing.T) {
	// Random windows of a 16 MiB pool: two 1 KiB records of one batch
	// sharing their payload would let compression cheat.
	p := newPayloads(3)
	seen := map[string]bool{}
	buf := make([]byte, 1024)
	for range 1000 {
		p.fill(buf)
		if seen[string(buf)] {
			t.Fatal("a payload repeated within 1000 records")
		}
		seen[string(buf)] = true
	}
}
