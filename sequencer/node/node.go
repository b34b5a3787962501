// Package node drives a sequencer.Sequencer against a real object store: it
// recovers it from the metadata log, runs its effects (log appends, read-backs,
// snapshots), delivers replies and pushes durable entries to subscribers.
// All the deciding happens in the sans-I/O core; this is the thin shell.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/group"
)

// Config configures a Node.
type Config struct {
	Name          string // human part of the writer identity
	Addr          string // advertised in the epoch entry
	SnapshotEvery uint64
	Groups        group.Config
	Logger        *slog.Logger
}

// retryDelay spaces out retries of failed metadata I/O.
const retryDelay = 50 * time.Millisecond

// Node runs one sequencer incarnation.
type Node struct {
	store objectio.Store
	log   *slog.Logger

	mu      sync.Mutex // guards everything below; never held during I/O
	seq     *sequencer.Sequencer
	nextID  uint64
	pending map[uint64]func(any)
	subs    []*subscriber
	joining []*subscriber // wait for a moment with no entry in flight
	fenced  chan struct{}
	// lastAcked is the newest entry a released reply rested on.
	lastAcked uint64

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

type subscriber struct {
	fn    func(sequencer.Update)
	gone  atomic.Bool // unsubscribed: skip
	from  uint64      // updates at or below this index are already in the copy
	ready chan []byte // the state, encoded
}

// Start recovers the sequencer from the store, appends its epoch entry and
// returns once it is active.
func Start(ctx context.Context, store objectio.Store, cfg Config) (*Node, error) {
	return StartFrom(ctx, store, cfg, nil)
}

// StartFrom is Start for a standby that followed the active sequencer: it
// starts from replica (a copy of the durable state it was sent, which it
// must not use afterwards) and replays only the entries after it. A nil
// replica recovers from the newest snapshot.
func StartFrom(ctx context.Context, store objectio.Store, cfg Config, replica *sequencer.State) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	writer := cfg.Name + "-" + nonce()
	seq := sequencer.New(sequencer.Config{Writer: writer, Addr: cfg.Addr, SnapshotEvery: cfg.SnapshotEvery, Groups: cfg.Groups})
	var next uint64
	var err error
	if replica != nil {
		seq.Restore(replica)
		next, err = replay(ctx, store, seq, replica.Index+1)
	} else {
		next, err = Recover(ctx, store, seq)
	}
	if err != nil {
		return nil, err
	}
	cfg.Logger.Info("sequencer recovered", "entries", next-1, "writer", writer, "from_replica", replica != nil)
	seq.Activate()
	runCtx, cancel := context.WithCancel(context.Background())
	n := &Node{
		store: store, log: cfg.Logger, seq: seq,
		pending: map[uint64]func(any){}, fenced: make(chan struct{}),
		kick: make(chan struct{}, 1), ctx: runCtx, cancel: cancel, done: make(chan struct{}),
	}
	go n.run()
	n.poke() // the epoch entry is waiting in Ready
	for !n.active() {
		select {
		case <-ctx.Done():
			n.Close()
			return nil, ctx.Err()
		case <-n.fenced:
			n.Close()
			return nil, errors.New("sequencer: fenced while taking over")
		case <-time.After(time.Millisecond):
		}
	}
	return n, nil
}

func (n *Node) active() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.seq.Active()
}

// Recover restores seq from the newest snapshot and replays the log after
// it, up to the first missing entry. It returns the index of that entry.
func Recover(ctx context.Context, store objectio.Store, seq *sequencer.Sequencer) (uint64, error) {
	snaps, err := objectio.ListAll(ctx, store, sequencer.SnapPrefix)
	if err != nil {
		return 0, fmt.Errorf("list snapshots: %w", err)
	}
	var from uint64
	for i := len(snaps) - 1; i >= 0; i-- {
		idx, ok := sequencer.ParseIndexKey(snaps[i].Key, sequencer.SnapPrefix)
		if !ok {
			continue
		}
		data, err := store.Get(ctx, snaps[i].Key, 0, -1)
		if err != nil {
			return 0, fmt.Errorf("read snapshot %d: %w", idx, err)
		}
		st, err := sequencer.UnmarshalState(data)
		if err != nil || st.Index != idx {
			return 0, fmt.Errorf("snapshot %d is unreadable: %v", idx, err)
		}
		seq.Restore(st)
		from = idx
		break
	}
	return replay(ctx, store, seq, from+1)
}

// replay applies the log from index on, up to the first missing entry, and
// returns that entry's index.
func replay(ctx context.Context, store objectio.Store, seq *sequencer.Sequencer, from uint64) (uint64, error) {
	for index := from; ; index++ {
		data, err := store.Get(ctx, sequencer.LogKey(index), 0, -1)
		if errors.Is(err, objectio.ErrNotFound) {
			return index, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read log entry %d: %w", index, err)
		}
		if err := seq.Replay(index, data); err != nil {
			return 0, err
		}
	}
}

// Submit hands a request to the sequencer; done is called with the reply
// body, from the node's goroutine, once the reply may be sent.
func (n *Node) Submit(body any, done func(any)) {
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	n.pending[id] = done
	n.seq.Tick(time.Now())
	n.seq.Step(sequencer.Request{ID: id, Body: body})
	n.mu.Unlock()
	n.poke()
}

// Subscribe returns a copy of the durable state and calls fn, in order and
// from one goroutine, with every entry made durable after it, until cancel
// is called. fn must not block: it holds up every other subscriber.
func (n *Node) Subscribe(fn func(sequencer.Update)) (st *sequencer.State, cancel func()) {
	data, cancel := n.SubscribeEncoded(fn)
	if data == nil {
		return nil, cancel
	}
	st, err := sequencer.UnmarshalState(data)
	if err != nil {
		panic(err) // the node just encoded it
	}
	return st, cancel
}

// SubscribeEncoded is Subscribe with the state as the node encoded it
// (sequencer.State.Marshal), for a subscriber that sends it on: decoding and
// encoding again a large state costs far more than the copy.
func (n *Node) SubscribeEncoded(fn func(sequencer.Update)) (state []byte, cancel func()) {
	s := &subscriber{fn: fn, ready: make(chan []byte, 1)}
	n.mu.Lock()
	n.joining = append(n.joining, s)
	n.mu.Unlock()
	n.poke()
	select {
	case state = <-s.ready:
	case <-n.ctx.Done():
		return nil, func() {}
	}
	return state, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		s.gone.Store(true)
		n.subs = slices.DeleteFunc(n.subs, func(x *subscriber) bool { return x == s })
	}
}

// Follow is the agent's view of an in-process sequencer (server.Sequencer):
// onState gets the state once, then onUpdate every later entry.
func (n *Node) Follow(onState func(*sequencer.State), onUpdate func(sequencer.Update)) {
	st, _ := n.Subscribe(onUpdate)
	if st != nil {
		onState(st)
	}
}

// Durable is the index of the newest durable entry.
func (n *Node) Durable() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	d := n.seq.State().Index
	if n.seq.InFlight() {
		d--
	}
	return d
}

// Active reports whether the sequencer has taken over and is not fenced.
func (n *Node) Active() bool { return n.active() }

// Fenced is closed when another sequencer has taken over.
func (n *Node) Fenced() <-chan struct{} { return n.fenced }

// Close stops the node. Requests still waiting get no reply.
func (n *Node) Close() {
	n.cancel()
	<-n.done
}

func (n *Node) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// tickEvery is how often the sequencer's clock advances when nothing else
// happens: group session and rebalance timeouts are checked this often.
const tickEvery = 50 * time.Millisecond

func (n *Node) run() {
	defer close(n.done)
	ticker := time.NewTicker(tickEvery)
	defer ticker.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.kick:
		case now := <-ticker.C:
			n.mu.Lock()
			n.seq.Tick(now)
			n.mu.Unlock()
		}
		n.step()
	}
}

// step takes one Ready from the core and carries it out.
func (n *Node) step() {
	n.mu.Lock()
	n.admitSubscribers()
	rd := n.seq.Ready()
	dones := make([]func(), 0, len(rd.Replies))
	for _, r := range rd.Replies {
		n.lastAcked = max(n.lastAcked, r.Entry)
		if fn := n.pending[r.ID]; fn != nil {
			delete(n.pending, r.ID)
			body := r.Body
			dones = append(dones, func() { fn(body) })
		}
	}
	subs := n.subs
	n.mu.Unlock()

	// Updates go out before replies: an agent that is told its batch is
	// committed must already be able to serve it.
	for _, u := range rd.Updates {
		for _, s := range subs {
			if u.Index > s.from && !s.gone.Load() {
				s.fn(u)
			}
		}
	}
	for _, d := range dones {
		d()
	}
	if rd.Append != nil {
		go n.append(*rd.Append)
	}
	if rd.Verify != 0 {
		go n.verify(rd.Verify)
	}
	if rd.Snapshot != nil {
		go n.snapshot(*rd.Snapshot)
	}
	if rd.Probe != 0 {
		go n.probe(rd.Probe)
	}
	if rd.Fenced {
		// Every reply released so far rests on an entry before the one
		// the other sequencer appended: the log line says which.
		n.log.Error("sequencer fenced: another sequencer appended to the metadata log; acknowledging nothing more",
			"last_acknowledged_entry", n.lastAcked)
		close(n.fenced)
	}
}

// admitSubscribers hands waiting subscribers the state, encoded once, at a
// moment when it is exactly the durable state: no entry in flight. Each
// decodes its own copy outside the lock: with a large index, decoding one
// copy per subscriber under the lock held up commits and heartbeats for
// seconds.
func (n *Node) admitSubscribers() {
	if len(n.joining) == 0 || n.seq.InFlight() {
		return
	}
	st := n.seq.State()
	data := st.Marshal()
	for _, s := range n.joining {
		s.from = st.Index
		n.subs = append(n.subs, s)
		s.ready <- data
	}
	n.joining = nil
}

func (n *Node) append(w sequencer.LogWrite) {
	err := n.store.Put(n.ctx, sequencer.LogKey(w.Index), w.Data, objectio.PutOptions{IfAbsent: true})
	if err != nil && !errors.Is(err, objectio.ErrExists) {
		n.log.Warn("metadata log append failed; verifying", "entry", w.Index, "err", err)
		n.sleep()
	}
	n.mu.Lock()
	n.seq.AppendDone(w.Index, err)
	n.mu.Unlock()
	n.poke()
}

func (n *Node) verify(index uint64) {
	data, err := n.store.Get(n.ctx, sequencer.LogKey(index), 0, -1)
	found := err == nil
	if errors.Is(err, objectio.ErrNotFound) {
		err = nil
	}
	if err != nil {
		n.sleep()
	}
	n.mu.Lock()
	n.seq.VerifyDone(index, data, found, err)
	n.mu.Unlock()
	n.poke()
}

func (n *Node) probe(index uint64) {
	_, err := n.store.Get(n.ctx, sequencer.LogKey(index), 0, 1)
	found := err == nil
	if errors.Is(err, objectio.ErrNotFound) {
		err = nil
	}
	n.mu.Lock()
	n.seq.ProbeDone(index, found, err)
	n.mu.Unlock()
	n.poke()
}

func (n *Node) snapshot(w sequencer.LogWrite) {
	err := n.store.Put(n.ctx, sequencer.SnapKey(w.Index), w.Data, objectio.PutOptions{IfAbsent: true})
	if err != nil && !errors.Is(err, objectio.ErrExists) {
		n.log.Warn("snapshot write failed; recovery will replay more entries", "entry", w.Index, "err", err)
	}
}

func (n *Node) sleep() {
	select {
	case <-n.ctx.Done():
	case <-time.After(retryDelay):
	}
}

func nonce() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// FindActive reads the newest epoch entry (see discovery.EpochScan): its
// Addr is the active sequencer's link address, or the last one's if it is
// gone. Agents and standbys use it to find the sequencer; so do operators'
// tools.
func FindActive(ctx context.Context, store objectio.Store) (sequencer.EpochOp, error) {
	ep, _, err := FindActiveAfter(ctx, store, 0, sequencer.EpochOp{})
	return ep, err
}

// FindActiveAfter is FindActive for a reader that knows the log up to entry
// after, with known the newest epoch in it: it reads only the entries since
// (see discovery.EpochScan). It also returns the newest entry it saw.
func FindActiveAfter(ctx context.Context, store objectio.Store, after uint64, known sequencer.EpochOp) (ep sequencer.EpochOp, through uint64, err error) {
	sc := discovery.EpochScan{After: after, Known: known}
	for {
		step := sc.Next()
		switch {
		case step.Done:
			return sc.Result(), sc.Through(), nil
		case step.List:
			objs, err := objectio.ListAfter(ctx, store, step.Prefix, step.StartAfter)
			if err != nil {
				return sequencer.EpochOp{}, 0, err
			}
			keys := make([]string, len(objs))
			for i, o := range objs {
				keys[i] = o.Key
			}
			sc.Listed(keys)
		default:
			data := make([][]byte, len(step.Keys))
			found := make([]bool, len(step.Keys))
			errs := make([]error, len(step.Keys))
			var wg sync.WaitGroup
			for i, key := range step.Keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					data[i], errs[i] = store.Get(ctx, key, 0, -1)
					found[i] = errs[i] == nil
					if errors.Is(errs[i], objectio.ErrNotFound) {
						errs[i] = nil
					}
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return sequencer.EpochOp{}, 0, err
			}
			if err := sc.Got(data, found); err != nil {
				return sequencer.EpochOp{}, 0, err
			}
		}
	}
}
