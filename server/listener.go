package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/sluicedb/sluice/codec"
)

// Server is the gnet shell around an Agent: it frames requests, decodes
// them with kmsg, and dispatches them to the per-API handlers.
type Server struct {
	gnet.BuiltinEventEngine
	agent *Agent
	log   *slog.Logger
	addr  string

	eng    gnet.Engine
	booted chan struct{}
	done   chan error
	conns  atomic.Int64

	// Requests being read: how many, and the bytes given to them ahead of
	// their arrival (see framesAheadMax).
	reading     atomic.Int64
	framesAhead atomic.Int64
}

// connState is what a gnet connection's context holds.
type connState struct {
	conn *conn

	// Owned by the connection's event loop.
	frame *bytebufferpool.ByteBuffer // the request being read, nil between requests
	need  int                        // its size, without the 4-byte length
	ahead int                        // what its buffer counts in Server.framesAhead
}

// Serve starts serving Kafka on addr ("127.0.0.1:9092"). It returns once the
// listener is bound.
func Serve(agent *Agent, addr string) (*Server, error) {
	s := &Server{agent: agent, log: agent.log, addr: addr, booted: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		s.done <- gnet.Run(s, "tcp://"+addr,
			gnet.WithMulticore(true),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithReuseAddr(true),
			gnet.WithLogger(gnetLogger{s.log}),
		)
	}()
	select {
	case <-s.booted:
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	case <-time.After(10 * time.Second):
		return nil, errors.New("listener did not start in 10s")
	}
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.addr }

// Close stops accepting and closes every connection.
func (s *Server) Close(ctx context.Context) error {
	err := s.eng.Stop(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
	}
	return err
}

func (s *Server) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s.conns.Add(1)
	c.SetContext(&connState{conn: &conn{gc: c, server: s}})
	return nil, gnet.None
}

func (s *Server) OnClose(c gnet.Conn, err error) gnet.Action {
	s.conns.Add(-1)
	if st, ok := c.Context().(*connState); ok && st.frame != nil {
		putFrame(s.endFrame(st))
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.log.Debug("connection closed", "remote", c.RemoteAddr(), "err", err)
	}
	return gnet.None
}

// OnTraffic moves the bytes gnet has read into the request being read, and
// dispatches every request that is complete. It never blocks: handlers that
// wait respond later from other goroutines.
//
// A request's bytes are copied out of gnet's buffer as they arrive, into a
// pooled buffer of its own that lives until its response is written (or, for
// a produce, until its batches are in the flush buffer). Leaving a large
// request in gnet's buffer until it was whole would grow that buffer to the
// request's size for every connection, and cost two more copies: gnet's
// into its ring buffer, and Peek's to join the ring's two halves.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	st := c.Context().(*connState)
	for {
		if st.frame == nil {
			if st.conn.pending() >= inflightMax {
				st.conn.paused.Store(true) // resume() wakes us when responses drain
				// A response may have drained between the check and the
				// store, its resume() finding nothing paused: look again.
				if st.conn.pending() >= inflightMax {
					s.agent.metrics.connectionsPaused.Add(1)
					return gnet.None
				}
				st.conn.paused.Store(false)
			}
			head, err := c.Peek(4)
			if err != nil {
				return gnet.None // fewer than 4 bytes buffered
			}
			total, _, err := codec.FrameSize(head, s.agent.cfg.MaxRequestBytes)
			if err != nil {
				s.log.Warn("closing connection: bad frame", "remote", c.RemoteAddr(), "err", err)
				return gnet.Close
			}
			if _, err := c.Discard(4); err != nil {
				return gnet.Close
			}
			s.startFrame(st, total-4)
		}
		buf := st.frame.B
		n := min(c.InboundBuffered(), st.need-len(buf))
		buf = slices.Grow(buf, n)
		m, _ := c.Read(buf[len(buf) : len(buf)+n])
		st.frame.B = buf[:len(buf)+m]
		if len(st.frame.B) < st.need {
			return gnet.None
		}
		if err := s.dispatch(st.conn, s.endFrame(st)); err != nil {
			s.log.Warn("closing connection: bad request", "remote", c.RemoteAddr(), "err", err)
			return gnet.Close
		}
	}
}

// framesAheadMax bounds the bytes given to requests ahead of their arrival,
// over all connections. A large request gets a buffer of its announced size
// at once, so that its bytes are copied once, as they come, with no
// regrowing. But a size costs a client 4 bytes to announce: past this bound,
// a request's buffer grows only as its bytes arrive, and announcing sizes
// on idle connections costs the agent nothing.
const framesAheadMax = 64 << 20

// startFrame begins reading a request of need bytes on st.
func (s *Server) startFrame(st *connState, need int) {
	s.reading.Add(1)
	st.need = need
	if need > largeFrameMin && need <= largeFrameMax { // a size getFrame takes from the pools
		if s.framesAhead.Add(int64(need)) <= framesAheadMax {
			st.frame, st.ahead = getFrame(need), need
			return
		}
		s.framesAhead.Add(-int64(need))
	}
	st.frame = getFrame(0) // grown as the bytes come
}

// endFrame takes the request off st, whole or not.
func (s *Server) endFrame(st *connState) *bytebufferpool.ByteBuffer {
	f := st.frame
	s.reading.Add(-1)
	s.framesAhead.Add(-int64(st.ahead))
	st.frame, st.need, st.ahead = nil, 0, 0
	return f
}

// resume restarts reading on a connection paused at inflightMax. It may run
// off the connection's event loop, so it reads nothing gnet owns (the
// connection's context is cleared on the loop when it closes).
func (s *Server) resume(cn *conn) {
	if cn.paused.CompareAndSwap(true, false) {
		_ = cn.gc.Wake(nil)
	}
}

// dispatch parses one request and hands it to its handler. An error closes
// the connection: the bytes cannot be answered in the protocol.
func (s *Server) dispatch(cn *conn, frame *bytebufferpool.ByteBuffer) error {
	hdr, body, err := codec.ParseRequest(frame.B)
	if err != nil {
		putFrame(frame)
		return err
	}
	a, served := apis[hdr.APIKey]
	if !served {
		putFrame(frame)
		return fmt.Errorf("unsupported api key %d", hdr.APIKey)
	}
	c := &call{conn: cn, hdr: hdr}
	if hdr.APIVersion < a.minVersion || hdr.APIVersion > a.maxVersion {
		c.slot = cn.push(frame)
		return s.unsupportedVersion(c, a)
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		putFrame(frame)
		return fmt.Errorf("malformed %s v%d: %w", kmsg.NameForKey(hdr.APIKey), hdr.APIVersion, err)
	}
	c.slot = cn.push(frame)
	c.req = req
	a.fn(s.agent, c)
	return nil
}
