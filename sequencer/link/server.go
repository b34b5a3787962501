package link

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/node"
)

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	// HeartbeatEvery is how often subscribers hear the durable index while
	// nothing else is sent. Followers give up after a lease of silence.
	HeartbeatEvery time.Duration
	// QueueBytes bounds what may wait to be written to one peer.
	QueueBytes int
	// WriteTimeout bounds one write to a peer.
	WriteTimeout time.Duration
	Logger       *slog.Logger
}

// Defaults.
const (
	DefaultHeartbeatEvery = 100 * time.Millisecond
	DefaultQueueBytes     = 256 << 20
	DefaultWriteTimeout   = 5 * time.Second
)

func (c *ServerConfig) setDefaults() {
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = DefaultQueueBytes
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server serves an active sequencer's node to agents and standbys.
type Server struct {
	node *node.Node
	ln   net.Listener
	cfg  ServerConfig

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Serve accepts link connections on ln until Close.
func Serve(n *node.Node, ln net.Listener, cfg ServerConfig) *Server {
	cfg.setDefaults()
	s := &Server{node: n, ln: ln, cfg: cfg, conns: map[*conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

// Addr is the listener's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for their
// goroutines. Requests in flight get no reply: their agents fail them.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.close(errors.New("link: server closed"))
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := newConn(nc, s.cfg.QueueBytes, s.cfg.WriteTimeout)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.close(errors.New("link: server closed"))
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(c)
	}
}

// serve reads one peer's frames until the connection closes.
func (s *Server) serve(c *conn) {
	defer s.wg.Done()
	var unsubscribe func()
	defer func() {
		if unsubscribe != nil {
			unsubscribe()
		}
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	r := c.reader()
	for {
		f, err := r.read(0)
		if err != nil {
			if !errors.Is(err, io.EOF) && !c.closed() {
				s.cfg.Logger.Warn("link: closing connection", "peer", c.nc.RemoteAddr(), "err", err)
			}
			c.close(err)
			return
		}
		switch f.Kind {
		case KindSubscribe:
			if unsubscribe != nil {
				continue // one subscription per connection
			}
			if !s.node.Active() {
				c.send(Frame{Kind: KindNotActive})
				continue
			}
			unsubscribe = s.subscribe(c)
		case KindRequest:
			if !sequencer.Accepts(f.Body) {
				s.cfg.Logger.Warn("link: request the sequencer does not take; closing connection", "peer", c.nc.RemoteAddr(), "body", fmt.Sprintf("%T", f.Body))
				c.close(errors.New("link: unexpected request"))
				return
			}
			id := f.ID
			s.node.Submit(f.Body, func(reply any) { c.send(Frame{Kind: KindReply, ID: id, Body: reply}) })
		default:
			s.cfg.Logger.Warn("link: unexpected frame; closing connection", "peer", c.nc.RemoteAddr(), "kind", f.Kind)
			c.close(errors.New("link: unexpected frame"))
			return
		}
	}
}

// subscribe sends c the state, then every durable entry, and a heartbeat
// every HeartbeatEvery from the start: building and sending a large state
// takes a while, and the peer must not take that silence for a dead
// sequencer.
func (s *Server) subscribe(c *conn) (unsubscribe func()) {
	stop := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.cfg.HeartbeatEvery)
		defer t.Stop()
		for {
			if s.node.Active() {
				// Fenced: stop vouching for the log; the peer gives up
				// on this sequencer after a lease.
				c.send(Frame{Kind: KindHeartbeat, Index: s.node.Durable()})
			}
			select {
			case <-t.C:
			case <-stop:
				return
			case <-c.done:
				return
			}
		}
	}()
	// The node may hand over the first update before SubscribeEncoded
	// returns the state; handoff holds the update until the state is
	// queued, so that the peer sees them in order.
	var handoff sync.Mutex
	handoff.Lock()
	state, cancel := s.node.SubscribeEncoded(func(u sequencer.Update) {
		handoff.Lock()
		defer handoff.Unlock()
		c.send(Frame{Kind: KindUpdate, Index: u.Index, Data: u.Data})
	})
	unsubscribe = func() {
		close(stop)
		cancel()
	}
	if state == nil {
		handoff.Unlock()
		c.close(errors.New("link: sequencer closed"))
		return unsubscribe
	}
	c.send(Frame{Kind: KindState, Data: state})
	handoff.Unlock()
	return unsubscribe
}
