package link

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/node"
)

// ClientConfig configures a Client. Zero values take the defaults.
type ClientConfig struct {
	// Seed is the configured sequencer address (--sequencer).
	Seed string
	// Self is this process's own link address, for a standby sequencer.
	Self string
	// Standby makes the client a standby sequencer's: when its Follower
	// decides to take over, OnTakeOver is called and the client stops.
	Standby    bool
	OnTakeOver func()
	// Lease: see discovery.Config.
	Lease time.Duration
	// Store is the object store, read to find the newest epoch entry.
	Store objectio.Store
	// PendingMax bounds the requests waiting for a sequencer or a reply;
	// past it, requests fail at once with a retriable error.
	PendingMax int
	// HoldMax is how long a request waits for a sequencer to send it to
	// before it fails with a retriable error.
	HoldMax time.Duration
	Logger  *slog.Logger
}

// Defaults.
const (
	DefaultPendingMax = 65536
	DefaultHoldMax    = 10 * time.Second
	tickEvery         = 25 * time.Millisecond
	dialTimeout       = time.Second
	stateWaitMax      = time.Minute // how long a subscriber waits for the state
)

// Client is an agent's (or a standby's) side of the link: it finds the
// active sequencer with a discovery.Follower, subscribes to it, sends it
// requests, and delivers the state and the updates it pushes. It implements
// server.Sequencer.
//
// A request is held while there is no sequencer to send it to (up to
// HoldMax), and sent in submission order once there is: the agent's commits
// must reach the sequencer in seal order. A request whose connection breaks
// before its reply is failed with a retriable error; it may have been
// decided, which is why an agent never acknowledges without a reply.
type Client struct {
	cfg ClientConfig
	log *slog.Logger

	mu      sync.Mutex
	f       *discovery.Follower
	cur     *conn // the subscribed connection, nil when none
	gen     int   // bumped whenever cur changes: stale goroutines stop
	nextID  uint64
	pending map[uint64]*request // sent on cur, awaiting a reply
	held    []*request          // not yet sent, in submission order
	applied uint64              // index of the newest state or update delivered
	epoch   sequencer.EpochOp   // the newest epoch entry among them
	// scanned and scannedEpoch are where the last epoch scan got to and
	// what it found: a client with no replica yet scans from there.
	scanned      uint64
	scannedEpoch sequencer.EpochOp
	durable      uint64    // newest durable index heard
	behind       time.Time // since when applied < durable, zero if not
	stopped      bool

	deliverMu sync.Mutex // one delivery of state or update at a time
	onState   func(*sequencer.State)
	onUpdate  func(sequencer.Update)
	gotState  chan struct{}
	stateOnce sync.Once

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type request struct {
	id    uint64
	body  any
	done  func(any)
	since time.Time
}

// NewClient returns a client; Follow starts it.
func NewClient(cfg ClientConfig) *Client {
	if cfg.PendingMax <= 0 {
		cfg.PendingMax = DefaultPendingMax
	}
	if cfg.HoldMax <= 0 {
		cfg.HoldMax = DefaultHoldMax
	}
	if cfg.Lease <= 0 {
		cfg.Lease = discovery.DefaultLease
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg: cfg, log: cfg.Logger, pending: map[uint64]*request{}, gotState: make(chan struct{}),
		f:   discovery.New(time.Now(), discovery.Config{Seed: cfg.Seed, Self: cfg.Self, Lease: cfg.Lease, Standby: cfg.Standby}),
		ctx: ctx, cancel: cancel,
	}
}

// Follow starts following: onState gets a copy of the durable state on
// every subscription, onUpdate every entry after it. It returns once the
// first state was delivered, or the client was closed. A standby that takes
// over before it ever hears from a sequencer also makes it return.
func (c *Client) Follow(onState func(*sequencer.State), onUpdate func(sequencer.Update)) {
	c.onState, c.onUpdate = onState, onUpdate
	c.wg.Add(1)
	go c.run()
	select {
	case <-c.gotState:
	case <-c.ctx.Done():
	}
}

// Close stops the client. Requests still waiting fail.
func (c *Client) Close() {
	c.mu.Lock()
	c.stopped = true
	cur := c.cur
	c.mu.Unlock()
	c.cancel()
	if cur != nil {
		cur.close(errors.New("link: client closed"))
	}
	c.wg.Wait()
	c.mu.Lock()
	failed := c.dropAll()
	c.mu.Unlock()
	failAll(failed)
}

// Submit sends body to the active sequencer; done gets the reply, or a
// retriable error reply if it cannot be had. done must not block.
func (c *Client) Submit(body any, done func(any)) {
	c.mu.Lock()
	if c.stopped || len(c.pending)+len(c.held) >= c.cfg.PendingMax {
		c.mu.Unlock()
		done(failure(body))
		return
	}
	c.nextID++
	r := &request{id: c.nextID, body: body, done: done, since: time.Now()}
	if c.cur != nil && c.f.Following() && len(c.held) == 0 {
		c.sendLocked(r)
	} else {
		c.held = append(c.held, r)
	}
	c.mu.Unlock()
}

// sendLocked sends r on cur; if that fails, cur is broken and r waits.
func (c *Client) sendLocked(r *request) {
	c.pending[r.id] = r
	if !c.cur.send(Frame{Kind: KindRequest, ID: r.id, Body: r.body}) {
		delete(c.pending, r.id)
		c.held = append(c.held, r)
	}
}

// failure is the reply to a request that did not get one: retriable for
// the client. A commit fails with REQUEST_TIMED_OUT since it may have
// happened; a group request with NOT_COORDINATOR so that the client looks
// for the coordinator again.
func failure(body any) any {
	switch body.(type) {
	case *sequencer.CommitRequest, *sequencer.CreateTopicRequest, *sequencer.DeleteTopicRequest, *sequencer.CreatePartitionsRequest:
		return sequencer.ErrorReplyBody(body, kerr.RequestTimedOut.Code)
	case *sequencer.JoinGroup, kmsg.Request:
		return sequencer.ErrorReplyBody(body, kerr.NotCoordinator.Code)
	default:
		return sequencer.ErrorReplyBody(body, kerr.CoordinatorNotAvailable.Code)
	}
}

func failAll(rs []*request) {
	for _, r := range rs {
		r.done(failure(r.body))
	}
}

// dropAll takes every request out, to be failed outside the lock.
func (c *Client) dropAll() []*request {
	out := c.held
	for _, r := range c.pending {
		out = append(out, r)
	}
	c.held, c.pending = nil, map[uint64]*request{}
	return out
}

// run ticks the Follower and carries out its actions.
func (c *Client) run() {
	defer c.wg.Done()
	t := time.NewTicker(tickEvery)
	defer t.Stop()
	for {
		c.tick(time.Now())
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *Client) tick(now time.Time) {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	var failed []*request
	// Requests held past HoldMax fail; the rest keep their order.
	for len(c.held) > 0 && now.Sub(c.held[0].since) > c.cfg.HoldMax {
		failed = append(failed, c.held[0])
		c.held = c.held[1:]
	}
	// Over TCP updates cannot be lost, but a replica that stays behind the
	// heartbeats for a lease is resubscribed rather than served stale.
	if c.cur != nil && c.applied < c.durable {
		if c.behind.IsZero() {
			c.behind = now
		} else if now.Sub(c.behind) > c.cfg.Lease {
			c.log.Warn("link: replica behind the sequencer's heartbeats; resubscribing", "applied", c.applied, "durable", c.durable)
			failed = append(failed, c.dropLocked(errors.New("link: replica behind"))...)
			c.f.Failed(now)
		}
	} else {
		c.behind = time.Time{}
	}
	act := c.f.Tick(now)
	gen := c.gen
	switch act.Kind {
	case discovery.Connect:
		c.wg.Add(1)
		go c.connect(gen, act.Addr)
	case discovery.Disconnect:
		c.log.Warn("link: no word from the sequencer for a lease; giving up on it", "sequencer", act.Addr)
		failed = append(failed, c.dropLocked(errors.New("link: sequencer silent"))...)
	case discovery.Scan:
		after, known := c.applied, c.epoch
		if c.scanned > after {
			after, known = c.scanned, c.scannedEpoch
		}
		c.wg.Add(1)
		go c.scan(gen, after, known)
	case discovery.TakeOver:
		c.stopped = true
		failed = append(failed, c.dropAll()...)
		c.mu.Unlock()
		failAll(failed)
		c.log.Info("link: no active sequencer for a lease; taking over")
		c.cancel()
		go c.cfg.OnTakeOver()
		return
	}
	c.mu.Unlock()
	failAll(failed)
}

// dropLocked closes cur and returns the requests sent on it, which must
// fail: their outcome is unknown.
func (c *Client) dropLocked(why error) []*request {
	if c.cur != nil {
		c.cur.close(why)
		c.cur = nil
	}
	c.gen++
	var out []*request
	for id, r := range c.pending {
		out = append(out, r)
		delete(c.pending, id)
	}
	return out
}

// connect dials addr, subscribes, and on a state becomes the current
// connection and reads it until it breaks.
func (c *Client) connect(gen int, addr string) {
	defer c.wg.Done()
	fail := func(err error) {
		c.mu.Lock()
		if c.gen == gen {
			c.f.Failed(time.Now())
		}
		c.mu.Unlock()
		c.log.Debug("link: cannot follow sequencer", "sequencer", addr, "err", err)
	}
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(c.ctx, "tcp", addr)
	if err != nil {
		fail(err)
		return
	}
	cn := newConn(nc, DefaultQueueBytes, DefaultWriteTimeout)
	r := cn.reader()
	cn.send(Frame{Kind: KindSubscribe})
	// Heartbeats come while the sequencer builds and sends its state:
	// they show it is alive and active, however long a large state takes,
	// up to stateWaitMax.
	var f Frame
	for start := time.Now(); ; {
		f, err = r.read(c.cfg.Lease)
		if err != nil || f.Kind != KindHeartbeat {
			break
		}
		c.mu.Lock()
		if c.gen == gen {
			c.f.Heard(time.Now())
		}
		c.mu.Unlock()
		if time.Since(start) > stateWaitMax {
			err = fmt.Errorf("link: no state from %s in %v", addr, stateWaitMax)
			break
		}
	}
	if err == nil && f.Kind != KindState {
		err = fmt.Errorf("link: %s answered a subscription with frame kind %d (not active)", addr, f.Kind)
	}
	if err != nil {
		cn.close(err)
		fail(err)
		return
	}
	st, err := sequencer.UnmarshalState(f.Data)
	if err != nil {
		cn.close(err)
		fail(err)
		return
	}
	c.mu.Lock()
	if c.gen != gen || c.stopped {
		c.mu.Unlock()
		cn.close(errors.New("link: superseded"))
		return
	}
	c.gen++
	gen = c.gen
	c.cur = cn
	c.f.Heard(time.Now())
	c.durable = 0
	// Deliver the state before any request is sent on the connection: a
	// reply must never reach the agent before the state it rests on.
	c.deliverMu.Lock()
	c.applied, c.epoch = st.Index, st.Epoch
	c.mu.Unlock()
	c.onState(st)
	c.deliverMu.Unlock()
	c.stateOnce.Do(func() { close(c.gotState) })
	c.log.Info("link: following sequencer", "sequencer", addr, "index", st.Index, "epoch", st.Epoch.Epoch)

	c.mu.Lock()
	held := c.held
	c.held = nil
	for _, hr := range held {
		if c.cur == cn {
			c.sendLocked(hr)
		} else {
			c.held = append(c.held, hr)
		}
	}
	c.mu.Unlock()
	c.read(gen, cn, r)
}

// read handles the frames of the current connection until it breaks.
func (c *Client) read(gen int, cn *conn, r *deadlineReader) {
	for {
		// Heartbeats come every 100 ms; the Follower's lease decides
		// when silence is too long, so the read itself need not time out
		// before that, but must not block forever either.
		f, err := r.read(2 * c.cfg.Lease)
		c.mu.Lock()
		if c.gen != gen {
			c.mu.Unlock()
			return
		}
		if err != nil {
			if !c.stopped {
				c.log.Warn("link: connection to the sequencer broke", "err", err)
			}
			failed := c.dropLocked(err)
			c.f.Failed(time.Now())
			c.mu.Unlock()
			failAll(failed)
			return
		}
		c.f.Heard(time.Now())
		switch f.Kind {
		case KindReply:
			rq := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if rq != nil {
				rq.done(f.Body)
			}
			continue
		case KindHeartbeat:
			c.durable = max(c.durable, f.Index)
			c.mu.Unlock()
		case KindUpdate:
			e, err := sequencer.UnmarshalEntry(f.Data)
			if err != nil {
				failed := c.dropLocked(err)
				c.f.Failed(time.Now())
				c.mu.Unlock()
				failAll(failed)
				c.log.Error("link: undecodable update; resubscribing", "index", f.Index, "err", err)
				return
			}
			c.deliverMu.Lock()
			c.applied = max(c.applied, f.Index)
			for _, op := range e.Ops {
				if op.Epoch != nil {
					c.epoch = *op.Epoch
				}
			}
			c.mu.Unlock()
			c.onUpdate(sequencer.Update{Index: f.Index, Entry: e, Data: f.Data})
			c.deliverMu.Unlock()
		default:
			c.mu.Unlock()
		}
	}
}

// scan reads the newest epoch entry from the store: only the entries after
// the last one delivered, if any was.
func (c *Client) scan(gen int, after uint64, known sequencer.EpochOp) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	epoch, through, err := node.FindActiveAfter(ctx, c.cfg.Store, after, known)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && through > c.scanned {
		c.scanned, c.scannedEpoch = through, epoch
	}
	if c.gen != gen {
		return
	}
	if err != nil {
		c.log.Warn("link: cannot read the newest epoch entry", "err", err)
		c.f.Failed(time.Now())
		return
	}
	c.f.Scanned(time.Now(), epoch.Addr)
}
