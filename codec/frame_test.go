package codec

import (
	"encoding/binary"
	"errors"
	"testing"
)

func sizePrefix(size int32, rest ...byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), rest...)
}

func TestFrameSizeReportsTheTotalOrRejectsImpossibleSizes(t *testing.T) {
	tests := []struct {
		name      string
		in        []byte
		maxBytes  int32
		wantTotal int
		wantOK    bool
		wantErr   error
	}{
		{"empty stream waits", nil, 100, 0, false, nil},
		{"three bytes wait", []byte{0, 0, 0}, 100, 0, false, nil},
		{"prefix alone gives the total", sizePrefix(10), 100, 14, true, nil},
		{"total ignores bytes past the frame", sizePrefix(2, 1, 2, 3, 4, 5), 100, 6, true, nil},
		{"zero size", sizePrefix(0), 100, 4, true, nil},
		{"size exactly at the limit", sizePrefix(100), 100, 104, true, nil},
		{"default limit", sizePrefix(DefaultMaxRequestBytes), DefaultMaxRequestBytes, DefaultMaxRequestBytes + 4, true, nil},
		{"one above the limit", sizePrefix(101), 100, 0, false, ErrFrameTooLarge},
		{"negative size", sizePrefix(-1), 100, 0, false, ErrFrameNegative},
		{"most negative size", sizePrefix(-1 << 31), 100, 0, false, ErrFrameNegative},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			total, ok, err := FrameSize(tt.in, tt.maxBytes)
			if total != tt.wantTotal || ok != tt.wantOK || !errors.Is(err, tt.wantErr) {
				t.Errorf("FrameSize(% x, %d) = (%d, %v, %v), want (%d, %v, %v)",
					tt.in, tt.maxBytes, total, ok, err, tt.wantTotal, tt.wantOK, tt.wantErr)
			}
		})
	}
}

func TestFrameSizeDoesNotAllocate(t *testing.T) {
	in := sizePrefix(1000)
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = FrameSize(in, DefaultMaxRequestBytes) }); allocs != 0 {
		t.Errorf("FrameSize allocates %v times per call, want 0", allocs)
	}
}
