package balancer

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ioTimeout only keeps a broken test from hanging; no assertion depends on
// timing.
const ioTimeout = 10 * time.Second

// echoBackend is a real TCP server that greets each connection with its
// name and a newline, then echoes every byte until the client half-closes,
// then closes. The greeting tells a test which backend a connection reached.
type echoBackend struct {
	name string
	ln   net.Listener

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startEcho(t *testing.T, name string) *echoBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &echoBackend{name: name, ln: ln}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.conns = append(e.conns, c)
			e.mu.Unlock()
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				if _, err := io.WriteString(c, name+"\n"); err != nil {
					return
				}
				io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		e.mu.Lock()
		for _, c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

func (e *echoBackend) addr() string { return e.ln.Addr().String() }

// deadAddr returns a loopback address nobody listens on: dials to it are
// refused. Call it only after the balancer is listening: a port released
// here could otherwise become the balancer's own, and a balancer whose
// backend is itself dials itself without end.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func startBalancer(t *testing.T, backends ...string) *Balancer {
	t.Helper()
	b, err := Start("127.0.0.1:0", backends, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// connect dials the balancer and returns the connection with the name of
// the backend that greeted it.
func connect(t *testing.T, b *Balancer) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr(), ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(ioTimeout))
	r := bufio.NewReader(c)
	greeting, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's greeting through the balancer: %v", err)
	}
	return c, r, strings.TrimSuffix(greeting, "\n")
}

func TestConnectionsGoToBackendsInRoundRobinOrder(t *testing.T) {
	a, b, c := startEcho(t, "a"), startEcho(t, "b"), startEcho(t, "c")
	bal := startBalancer(t, a.addr(), b.addr(), c.addr())

	var got []string
	for range 6 {
		_, _, name := connect(t, bal)
		got = append(got, name)
	}
	if want := "a b c a b c"; strings.Join(got, " ") != want {
		t.Errorf("six connections reached backends %q, want %q", strings.Join(got, " "), want)
	}
}

func TestBytesAreCopiedBothWaysAndHalfCloseDeliversTheReply(t *testing.T) {
	bal := startBalancer(t, startEcho(t, "a").addr())
	c, r, _ := connect(t, bal)

	msg := strings.Repeat("sluice ", 100_000) // larger than any socket buffer
	go func() {
		io.WriteString(c, msg)
		// Half-close: the echo backend sees EOF only if the balancer
		// forwards it, and we must still read the whole echo.
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the echo after half-closing: %v", err)
	}
	if len(got) != len(msg) || string(got) != msg {
		t.Errorf("echo through the balancer: got %d bytes, want the %d sent, unchanged", len(got), len(msg))
	}
}

func TestADeadBackendIsSkipped(t *testing.T) {
	a, c := startEcho(t, "a"), startEcho(t, "c")
	bal := startBalancer(t)
	bal.SetBackends([]string{a.addr(), deadAddr(t), c.addr()})

	var got []string
	for range 6 {
		_, _, name := connect(t, bal)
		got = append(got, name)
	}
	// The second backend refuses, so the connection whose turn it is
	// falls through to the next one.
	if want := "a c c a c c"; strings.Join(got, " ") != want {
		t.Errorf("six connections reached backends %q, want %q", strings.Join(got, " "), want)
	}
}

// With no backend, the client connection is reset, not closed cleanly: a
// clean close before any response is what a TLS or SASL mismatch looks
// like, and clients (franz-go) give up on it instead of retrying.
func TestClientIsResetWhenNoBackendAnswers(t *testing.T) {
	bal := startBalancer(t)
	bal.SetBackends([]string{deadAddr(t), deadAddr(t)})
	c, err := net.Dial("tcp", bal.Addr())
	if err != nil {
		// The reset can beat the dialer's own check that the connection
		// is established; that is the same answer.
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("dial with no live backend: %v, want the connection reset", err)
		}
		return
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read from a client connection with no live backend: n=%d err=%v, want a connection reset", n, err)
	}
}

func TestSetBackendsRoutesNewConnections(t *testing.T) {
	a, b := startEcho(t, "a"), startEcho(t, "b")
	bal := startBalancer(t, a.addr())
	if _, _, name := connect(t, bal); name != "a" {
		t.Fatalf("first connection reached %q, want a", name)
	}
	bal.SetBackends([]string{b.addr()})
	for range 2 {
		if _, _, name := connect(t, bal); name != "b" {
			t.Errorf("after SetBackends(b), a connection reached %q", name)
		}
	}
}

func TestCloseTearsDownLiveConnections(t *testing.T) {
	e := startEcho(t, "a")
	bal := startBalancer(t, e.addr())
	c1, r1, _ := connect(t, bal)
	c2, r2, _ := connect(t, bal)

	// Both connections are live: a round trip works.
	for _, cr := range []struct {
		c net.Conn
		r *bufio.Reader
	}{{c1, r1}, {c2, r2}} {
		io.WriteString(cr.c, "ping\n")
		if line, err := cr.r.ReadString('\n'); err != nil || line != "ping\n" {
			t.Fatalf("round trip before Close: %q, %v", line, err)
		}
	}

	bal.Close() // returns only once every piping goroutine is done

	for i, r := range []*bufio.Reader{r1, r2} {
		n, err := r.Read(make([]byte, 1))
		if n != 0 || !isClosed(err) {
			t.Errorf("client %d after Close: read n=%d err=%v, want the connection closed", i+1, n, err)
		}
	}
	if c, err := net.DialTimeout("tcp", bal.Addr(), ioTimeout); err == nil {
		c.Close()
		t.Errorf("a dial to the balancer's address after Close succeeded, want it refused")
	}
}

// isClosed reports whether err is the peer closing (EOF or reset), as
// opposed to our own deadline expiring.
func isClosed(err error) bool {
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return true
}
