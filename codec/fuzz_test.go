package codec

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// within reports whether sub lies inside outer's bytes (an empty sub always
// does), so a fuzz target can check that returned slices alias the input.
func within(sub, outer []byte) bool {
	if len(sub) == 0 {
		return true
	}
	if len(outer) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(outer)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return p >= start && p+uintptr(len(sub)) <= start+uintptr(len(outer))
}

func FuzzParseRequest(f *testing.F) {
	clientID := testClientID
	for _, req := range []kmsg.Request{
		metadataRequest(1), metadataRequest(12), apiVersionsRequest(0), apiVersionsRequest(3),
		produceRequest(f, 8), produceRequest(f, 9), controlledShutdownRequest(0), controlledShutdownRequest(3),
	} {
		f.Add(encodeRequest(f, req, 7, &clientID))
		f.Add(encodeRequest(f, req, 7, nil))
	}
	f.Add(rawHeader(3, 12, 5, 0, 1, 'c', 2, 0, 3, 1, 2, 3, 5, 0, 0xAA))
	f.Add(rawHeader(999, 0, 5, 0, 2, 'i', 'd'))
	f.Add(rawHeader(18, 127, 5, 0, 1, 'c', 0))
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := ParseRequest(frame)
		if err != nil {
			if body != nil || h.ClientID != nil {
				t.Fatalf("error %v came with body % x client id %q", err, body, h.ClientID)
			}
			return
		}
		if !within(body, frame) || !within(h.ClientID, frame) {
			t.Fatalf("body or client id does not alias the frame")
		}
		if len(body) > 0 && &body[len(body)-1] != &frame[len(frame)-1] {
			t.Fatalf("body does not run to the end of the frame")
		}
		if len(frame)-len(body) < fixedHeaderBytes+len(h.ClientID) {
			t.Fatalf("header of %d bytes is shorter than its fields", len(frame)-len(body))
		}
		if flexible, known := requestFlexible(h.APIKey, h.APIVersion); h.Flexible && (!flexible || !known) {
			t.Fatalf("key %d v%d parsed as flexible, but kmsg says flexible=%v known=%v", h.APIKey, h.APIVersion, flexible, known)
		}
	})
}

func FuzzParseBatch(f *testing.F) {
	for _, n := range []int{0, 1, 3, 10} {
		f.Add(testBatch(f, n))
	}
	f.Add(testBatchAttrs(f, 2, 0x33))
	f.Add(testBatch(f, 2)[:BatchHeaderSize])
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkParsedBatch(t, raw)
		// Random bytes almost never carry a matching CRC, so also check a
		// copy with the CRC fixed up, to reach the checks behind it.
		if len(raw) >= BatchHeaderSize {
			checkParsedBatch(t, restamp(bytes.Clone(raw)))
		}
	})
}

// checkParsedBatch asserts what must hold of any batch ParseBatch accepts,
// and that the batch served with a new header (AppendServedHeader) is
// still acceptable.
func checkParsedBatch(t *testing.T, raw []byte) {
	b, err := ParseBatch(raw)
	if err != nil {
		return
	}
	if len(b) != len(raw) || len(b) < BatchHeaderSize || int(int32(binary.BigEndian.Uint32(raw[8:])))+12 != len(raw) {
		t.Fatalf("accepted batch of %d bytes from %d input bytes", len(b), len(raw))
	}
	if n := b.NumRecords(); n < 1 || b.LastOffsetDelta() != n-1 {
		t.Fatalf("accepted count %d with lastOffsetDelta %d", n, b.LastOffsetDelta())
	}
	if c := b.Compression(); c < 0 || c > 7 {
		t.Fatalf("compression %d outside the 3-bit field", c)
	}
	if tt := b.TimestampType(); tt != 0 && tt != 1 {
		t.Fatalf("timestamp type %d, want 0 or 1", tt)
	}
	before := bytes.Clone(raw)
	const offset, epoch = int64(1) << 50, int32(99)
	served := append(b.AppendServedHeader(nil, offset, epoch), raw[ServedHeaderSize:]...)
	if !bytes.Equal(raw, before) {
		t.Fatalf("AppendServedHeader wrote into the batch")
	}
	again, err := ParseBatch(served)
	if err != nil {
		t.Fatalf("ParseBatch of the served batch = %v, want nil", err)
	}
	if again.BaseOffset() != offset || again.PartitionLeaderEpoch() != epoch {
		t.Fatalf("served batch reads offset %d epoch %d, want %d %d", again.BaseOffset(), again.PartitionLeaderEpoch(), offset, epoch)
	}
	if !bytes.Equal(served[8:12], before[8:12]) || !bytes.Equal(served[16:], before[16:]) {
		t.Fatalf("the served batch differs outside its two rewritten fields")
	}
}

func FuzzSplitBatches(f *testing.F) {
	one, three := testBatch(f, 1), testBatch(f, 3)
	set := bytes.Join([][]byte{one, three, testBatch(f, 10)}, nil)
	f.Add(set)
	f.Add(set[:len(set)-7])
	f.Add(append(bytes.Clone(one), 0, 0, 0))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		next := 0
		consumed, err := SplitBatches(raw, func(b Batch) error {
			if len(b) < BatchHeaderSize {
				t.Fatalf("batch of %d bytes is shorter than a header", len(b))
			}
			if !within(b, raw[next:]) || &b[0] != &raw[next] {
				t.Fatalf("batch does not start where the previous one ended (byte %d)", next)
			}
			if b[offMagic] != batchMagic {
				t.Fatalf("batch with magic %d passed", b[16])
			}
			next += len(b)
			return nil
		})
		if consumed != next {
			t.Fatalf("consumed %d bytes, batches cover %d", consumed, next)
		}
		if consumed < 0 || consumed > len(raw) {
			t.Fatalf("consumed %d of %d bytes", consumed, len(raw))
		}
		if err == nil && len(raw)-consumed >= lengthPrefixedBytes {
			// What is left must be a partial batch: its declared size runs
			// past the end.
			if total := batchTotal(raw[consumed:]); total <= len(raw)-consumed {
				t.Fatalf("stopped at byte %d before a whole %d-byte batch", consumed, total)
			}
		}
	})
}
