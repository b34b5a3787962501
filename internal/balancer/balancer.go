// Package balancer is a small TCP load balancer, the kind users put in front
// of agents (HAProxy in TCP mode): each client connection is piped, bytes
// unchanged, to the next backend in round-robin order. Agents are stateless
// and all advertise the balancer, so which agent a connection lands on does
// not matter; the tests and the chaos program use this to run the cluster
// the way it is deployed.
package balancer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
)

// DialTimeout bounds one dial to a backend. A backend that neither accepts
// nor refuses within it is treated as dead for this connection, and the next
// one is tried.
const DialTimeout = 500 * time.Millisecond

// Balancer accepts connections on one address and pipes each to a backend.
type Balancer struct {
	ln     net.Listener
	log    *slog.Logger
	ctx    context.Context // cancelled by Close; aborts dials in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu       sync.Mutex // guards everything below
	backends []string
	next     int                   // index of the backend the next connection tries first
	conns    map[net.Conn]struct{} // open client and backend connections
	closed   bool
}

// Start listens on listen ("127.0.0.1:0" picks a free port) and balances
// over backends. A nil log discards.
func Start(listen string, backends []string, log *slog.Logger) (*Balancer, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Balancer{
		ln: ln, log: log, ctx: ctx, cancel: cancel,
		backends: append([]string(nil), backends...),
		conns:    map[net.Conn]struct{}{},
	}
	b.wg.Add(1)
	go b.acceptLoop()
	return b, nil
}

// Addr is the address clients connect to.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// SetBackends replaces the backend list. Connections already piped stay
// where they are; new ones use the new list.
func (b *Balancer) SetBackends(backends []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append([]string(nil), backends...)
	b.next = 0
}

// Close stops accepting, closes every proxied connection (both sides) and
// waits for their goroutines to finish. Clients see their connection close,
// as they would if a real balancer went away.
func (b *Balancer) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.cancel()
	b.ln.Close()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *Balancer) acceptLoop() {
	defer b.wg.Done()
	for {
		client, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures (EMFILE and the like): back off
			// briefly rather than spin.
			b.log.Warn("balancer: accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !b.track(client) {
			client.Close()
			return
		}
		b.wg.Add(1)
		go b.serve(client)
	}
}

// track registers an open connection so that Close can tear it down. It
// reports false once the balancer is closed: Close may already have swept
// the set, so the caller must close the connection itself.
func (b *Balancer) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.conns[c] = struct{}{}
	return true
}

func (b *Balancer) untrack(c net.Conn) {
	b.mu.Lock()
	delete(b.conns, c)
	b.mu.Unlock()
	c.Close()
}

// order returns the backends in the order this connection tries them: the
// round-robin choice first, then the rest, so one dead backend costs a
// connection a failed dial instead of the connection itself.
func (b *Balancer) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.backends)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, b.backends[(b.next+i)%n])
	}
	if n > 0 {
		b.next = (b.next + 1) % n
	}
	return out
}

// serve dials a backend for client and pipes the two together until both
// directions are done.
func (b *Balancer) serve(client net.Conn) {
	defer b.wg.Done()
	defer b.untrack(client)
	backend := b.dial(client.RemoteAddr().String())
	if backend == nil {
		// Reset rather than close: a clean close before the first
		// response looks to clients like a TLS or SASL mismatch, which
		// franz-go, for one, does not retry; a reset is a network error,
		// which every client retries, as it would a refused dial.
		if tc, ok := client.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		return
	}
	defer b.untrack(backend)

	done := make(chan struct{}, 2)
	go func() { pipe(backend, client); done <- struct{}{} }()
	go func() { pipe(client, backend); done <- struct{}{} }()
	<-done
	<-done
}

// dial connects to the first backend that answers, in round-robin order,
// and tracks it. It returns nil when none answers or the balancer closed.
func (b *Balancer) dial(from string) net.Conn {
	d := net.Dialer{Timeout: DialTimeout}
	for _, addr := range b.order() {
		c, err := d.DialContext(b.ctx, "tcp", addr)
		if err != nil {
			if b.ctx.Err() != nil {
				return nil
			}
			b.log.Debug("balancer: backend did not answer; trying the next", "backend", addr, "err", err)
			continue
		}
		if !b.track(c) {
			c.Close()
			return nil
		}
		b.log.Debug("balancer: piping", "client", from, "backend", addr)
		return c
	}
	b.log.Warn("balancer: no backend answered; resetting the client connection", "client", from)
	return nil
}

// pipe copies src to dst. At src's clean end of stream it half-closes dst,
// so a peer that shuts down its writing side still gets the replies to what
// it sent. On an error (a reset, a write to a dead peer) it closes both
// connections: the other direction would otherwise wait forever on a peer
// that will never speak again.
func pipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err == nil {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}
