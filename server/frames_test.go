package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/sluicedb/sluice/codec/codectest"
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

// TestPipelinedPastTheInflightBoundAllAnswered: a client that sends far
// more produce requests than inflightMax before reading any answer gets
// every answer, in order: the connection stops reading at the bound and
// starts again as answers drain, acks=0 produces among them, which drain
// with no answer.
func TestPipelinedPastTheInflightBoundAllAnswered(t *testing.T) {
	const requests = 4 * inflightMax
	// A window long enough that the bound is reached before the first
	// answers come.
	sa := startBroker(t, nil, Config{FlushWindow: 100 * time.Millisecond})
	createTopic(t, rawClient(t, sa.Addr()), "pipelined", 1)
	conn, err := net.Dial("tcp", sa.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []byte
	for i := range int32(requests) {
		req := produceRequest("pipelined", map[int32][]byte{0: codectest.Batch(codectest.BatchSpec{Records: 1, ValueBytes: 10})})
		req.SetVersion(7)
		if i%2 == 1 {
			req.Acks = 0 // never answered
		}
		out = appendRequest(out, 0, 7, i, req.AppendTo(nil))
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	go conn.Write(out)
	for i := int32(0); i < requests; i += 2 {
		var size [4]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			t.Fatalf("reading answer %d of %d: %v", i/2, requests/2, err)
		}
		resp := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(conn, resp); err != nil {
			t.Fatalf("reading answer %d of %d: %v", i/2, requests/2, err)
		}
		if got := int32(binary.BigEndian.Uint32(resp)); got != i {
			t.Fatalf("answer %d has correlation id %d, want %d", i/2, got, i)
		}
	}
	if paused := sa.Agent.metrics.connectionsPaused.Load(); paused == 0 {
		t.Errorf("the connection never stopped reading at %d requests in flight", inflightMax)
	}
}

// appendRequest appends a request frame with a null client id.
func appendRequest(b []byte, key, version int16, correlationID int32, body []byte) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, 0xffff)
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}
