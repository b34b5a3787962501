package link

import (
	"bufio"
	"errors"
	"net"
	"sync"
	"time"
)

// conn is one link connection's sending side: frames are queued without
// blocking the caller and written in batches by one goroutine. The queue is
// bounded: a peer that falls so far behind is cut off rather than allowed
// to hold the sender's memory (it reconnects and starts from a fresh state).
type conn struct {
	nc           net.Conn
	queueMax     int
	writeTimeout time.Duration

	mu     sync.Mutex
	queued []byte // encoded frames not yet written
	err    error  // why the connection closed, once it has
	wake   chan struct{}
	done   chan struct{}
}

var errQueueFull = errors.New("link: send queue full; peer too slow")

func newConn(nc net.Conn, queueMax int, writeTimeout time.Duration) *conn {
	c := &conn{nc: nc, queueMax: queueMax, writeTimeout: writeTimeout, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.writeLoop()
	return c
}

// send queues f. It reports false if the connection is closed, or closes it
// if the queue is over its bound. A single frame larger than the bound is
// let through when the queue is empty: a big state copy must still go out.
func (c *conn) send(f Frame) bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return false
	}
	before := len(c.queued)
	var err error
	c.queued, err = AppendFrame(c.queued, f)
	if err == nil && before > 0 && len(c.queued) > c.queueMax {
		err = errQueueFull
	}
	c.mu.Unlock()
	if err != nil {
		c.close(err)
		return false
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return true
}

func (c *conn) writeLoop() {
	var out []byte
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		out, c.queued = c.queued, out[:0]
		c.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout))
		if _, err := c.nc.Write(out); err != nil {
			c.close(err)
			return
		}
	}
}

// close closes the connection once, recording why.
func (c *conn) close(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
}

func (c *conn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// reader returns a buffered reader over the connection that fails when no
// frame arrives within timeout (timeout 0: never).
func (c *conn) reader() *deadlineReader {
	return &deadlineReader{c: c, r: bufio.NewReaderSize(c.nc, 64<<10)}
}

type deadlineReader struct {
	c *conn
	r *bufio.Reader
}

func (d *deadlineReader) read(timeout time.Duration) (Frame, error) {
	if timeout > 0 {
		d.c.nc.SetReadDeadline(time.Now().Add(timeout))
	} else {
		d.c.nc.SetReadDeadline(time.Time{})
	}
	return ReadFrame(d.r)
}
