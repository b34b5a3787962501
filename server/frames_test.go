package server

import (
	"encoding/binary"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestAnnouncedSizesCostLittle: a client that announces large requests
// and sends nothing more gets buffers of their size only up to
// framesAheadMax over all connections; past it, a request's buffer grows
// as its bytes come. (Before the bound, 32 connections that sent 5 bytes
// each held 512 MiB.)
func TestAnnouncedSizesCostLittle(t *testing.T) {
	const (
		conns     = 32
		announced = largeFrameMax // 16 MiB each, 512 MiB in all
	)
	sa := startBroker(t, nil, Config{MaxRequestBytes: 2 * largeFrameMax})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", sa.Addr())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		head := binary.BigEndian.AppendUint32(nil, announced)
		if _, err := c.Write(append(head, 0)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "every connection's request begun", func() (bool, string) {
		n := sa.Server.reading.Load()
		return n == conns, fmt.Sprintf("%d requests being read", n)
	})
	if ahead := sa.Server.framesAhead.Load(); ahead > framesAheadMax {
		t.Errorf("%d bytes given to requests ahead of their bytes, over the bound of %d", ahead, framesAheadMax)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > framesAheadMax+16<<20 {
		t.Errorf("%d connections that announced %d MiB and sent 1 byte grew the heap by %d MiB; want at most %d MiB",
			conns, announced>>20, grew>>20, (framesAheadMax+16<<20)>>20)
	}

	for _, c := range open {
		c.Close()
	}
	open = nil
	waitFor(t, 10*time.Second, "the closed connections' requests dropped", func() (bool, string) {
		n, ahead := sa.Server.reading.Load(), sa.Server.framesAhead.Load()
		return n == 0 && ahead == 0, fmt.Sprintf("%d requests being read, %d bytes ahead", n, ahead)
	})
}

// TestPooledFramesHoldWhatTheyAreGivenFor: whatever capacities come back
// to the frame pools (a request's buffer that grew as its bytes came may
// have any), getFrame's buffer holds the request it was asked for.
func TestPooledFramesHoldWhatTheyAreGivenFor(t *testing.T) {
	caps := []int{largeFrameMin + 1, 100 << 10, 128 << 10, 200 << 10, 1<<20 - 1, 3 << 20, largeFrameMax, largeFrameMax + 1, 40 << 20}
	needs := []int{1, largeFrameMin, largeFrameMin + 1, 100 << 10, 128 << 10, 129 << 10, 1<<20 + 1, 3 << 20, largeFrameMax}
	for range 3 {
		for _, c := range caps {
			f := getFrame(0)
			f.B = make([]byte, 0, c)
			putFrame(f)
		}
		for _, need := range needs {
			f := getFrame(need)
			if need > largeFrameMin && cap(f.B) < need {
				t.Fatalf("getFrame(%d) gave a buffer of capacity %d", need, cap(f.B))
			}
			if len(f.B) != 0 {
				t.Fatalf("getFrame(%d) gave a buffer holding %d bytes", need, len(f.B))
			}
			putFrame(f)
		}
	}
}
