package server

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/sluicedb/sluice/codec"
)

// inflightMax bounds the requests one connection may have unanswered. Past
// it the connection stops reading (gnet keeps the bytes buffered) until
// responses drain. Kafka clients pipeline at most 5 per connection by default.
const inflightMax = 256

// iovMax is the most slices one writev(2) takes: IOV_MAX, 1024 on Linux and
// the BSDs. gnet hands one AsyncWritev to one writev, which fails past it.
const iovMax = 1024

// conn is one client connection. Requests are pipelined: they are handled
// concurrently, but responses go out in request order, as Kafka requires.
type conn struct {
	gc     gnet.Conn
	server *Server
	paused atomic.Bool // stopped reading at inflightMax

	mu    sync.Mutex // guards slots; held while queueing writes so they keep order
	slots []*slot    // unanswered requests, oldest first
}

// slot is one request's place in the response order.
type slot struct {
	frame *bytebufferpool.ByteBuffer // the request; its bytes are aliased by the decoded request
	out   *bytebufferpool.ByteBuffer // owns the encoded response, nil until answered
	vec   [][]byte                   // if set, the slices to write instead of out.B (fetch: records by reference)
	after func()                     // if set, runs once vec is written (fetch: lets go of the cached values vec points into)
	done  bool
	none  bool // answered without a response (acks=0)
}

// call is one request being handled.
type call struct {
	conn *conn
	slot *slot
	hdr  codec.RequestHeader
	req  kmsg.Request
}

// remoteHost is the client's address as Kafka reports it ("/127.0.0.1").
func (cn *conn) remoteHost() string {
	if addr := cn.gc.RemoteAddr(); addr != nil {
		host, _, err := net.SplitHostPort(addr.String())
		if err == nil {
			return "/" + host
		}
	}
	return ""
}

func (cn *conn) push(frame *bytebufferpool.ByteBuffer) *slot {
	s := &slot{frame: frame}
	cn.mu.Lock()
	cn.slots = append(cn.slots, s)
	cn.mu.Unlock()
	return s
}

func (cn *conn) pending() int {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	return len(cn.slots)
}

// releaseRequest returns the request's frame to the pool before the call is
// answered. The decoded request's byte fields alias the frame, so only a
// handler that reads none of them again may call it, and it must do so
// before it answers. Produce does, once its batches are copied into the
// flush buffer: requests waiting for their acknowledgement then hold no
// frames.
func (c *call) releaseRequest() {
	c.conn.mu.Lock()
	frame := c.slot.frame
	c.slot.frame = nil
	c.conn.mu.Unlock()
	if frame != nil {
		putFrame(frame)
	}
}

// respond answers the call. resp nil means the request gets no response
// (a produce with acks=0).
func (c *call) respond(resp kmsg.Response) {
	if resp == nil {
		c.conn.complete(c.slot, nil, nil)
		return
	}
	resp.SetVersion(c.hdr.APIVersion)
	out := bytebufferpool.Get()
	out.B = codec.AppendResponse(out.B[:0], c.hdr.CorrelationID, resp)
	c.conn.complete(c.slot, out, nil)
}

// respondVec answers the call with a frame made of slices (see encodeFetch);
// scratch owns the bytes that are not borrowed, and after runs once they
// are all written, when the borrowed ones may be reused.
func (c *call) respondVec(scratch *bytebufferpool.ByteBuffer, vec [][]byte, after func()) {
	c.slot.after = after
	c.conn.complete(c.slot, scratch, vec)
}

// complete records a slot's response and writes every answered response at
// the head of the queue, in order.
func (cn *conn) complete(s *slot, out *bytebufferpool.ByteBuffer, vec [][]byte) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	s.out, s.vec, s.done, s.none = out, vec, true, out == nil
	var (
		batch    [][]byte
		finished []*slot
	)
	for len(cn.slots) > 0 && cn.slots[0].done {
		h := cn.slots[0]
		cn.slots = cn.slots[1:]
		finished = append(finished, h)
		if h.none {
			continue
		}
		if h.vec != nil {
			batch = append(batch, h.vec...)
		} else {
			batch = append(batch, h.out.B)
		}
	}
	if len(finished) == 0 {
		return
	}
	release := func(gnet.Conn, error) error {
		for _, f := range finished {
			if f.frame != nil {
				putFrame(f.frame)
			}
			if f.out != nil {
				bytebufferpool.Put(f.out)
			}
			if f.after != nil {
				f.after()
			}
		}
		return nil
	}
	if len(batch) == 0 {
		release(nil, nil)
		cn.server.resume(cn)
		return
	}
	// Queued while holding mu, so two goroutines completing adjacent slots
	// cannot queue their writes in the wrong order. A long batch (a fetch
	// of many small record batches) goes in consecutive writes of at most
	// iovMax slices; they stay in order in the connection's event-loop
	// queue, and only the last one releases the buffers. If queueing fails
	// (the connection or engine is closing), the buffers are left to the
	// garbage collector rather than pooled: an earlier chunk may still be
	// queued. Values a fetch held are then never released: their buffers
	// are not reused, and the collector takes them.
	for len(batch) > iovMax {
		if err := cn.gc.AsyncWritev(batch[:iovMax:iovMax], nil); err != nil {
			return
		}
		batch = batch[iovMax:]
	}
	_ = cn.gc.AsyncWritev(batch, func(c gnet.Conn, err error) error {
		release(c, err)
		cn.server.resume(cn)
		return nil
	})
}
