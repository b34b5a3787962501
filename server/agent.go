// Package server is the agent: it speaks the Kafka protocol to clients,
// coalesces produced batches into one object per flush window, has the
// sequencer order them, and serves fetches from the segment cache.
//
// Files: agent.go (state shared by all connections), flush.go (the sans-I/O
// flush window), commit.go (writing sealed objects and committing them),
// read.go (resolving fetches to cached bytes), listener.go and conn.go (the
// gnet shell), api.go (the handler registry) and one NN_name.go per Kafka API.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// Sequencer is how an agent reaches the sequencer: in process for `sluice
// serve`, over the network for `sluice agent`.
type Sequencer interface {
	// Submit sends a request body; done gets the reply body once it is
	// durable. done must not block.
	Submit(body any, done func(any))
	// Follow calls onState with a copy of the durable state, then onUpdate
	// with every later durable entry, in order, from one goroutine at a
	// time. A remote sequencer calls onState again whenever the agent
	// resubscribes (to the same sequencer or its successor): the agent
	// replaces its replica then. Follow returns once onState has run, or
	// when it never will (the sequencer was closed).
	Follow(onState func(*sequencer.State), onUpdate func(sequencer.Update))
}

// Config configures an agent. Zero values take the defaults below.
type Config struct {
	AgentID           string        // names the agent's data objects; must be unique per process
	NodeID            int32         // the broker id advertised to clients
	AdvertiseHost     string        // advertised in Metadata and FindCoordinator
	AdvertisePort     int32         //
	ClusterID         string        //
	FlushWindow       time.Duration // how long batches wait to share an object
	FlushIdle         time.Duration // seal sooner once no batch came for this long (0: never)
	FlushBytes        int           // an object is sealed early at this size
	MaxRequestBytes   int32         // larger frames close the connection
	MaxMessageBytes   int32         // larger batches get MESSAGE_TOO_LARGE
	AutoCreateTopics  bool          //
	DefaultPartitions int32         // for auto-created topics and CreateTopics with -1
	CacheBytes        int64         //
	// OtherAgents says other agents serve the same log (distributed mode):
	// a client may have seen a high watermark this agent's replica has not
	// reached yet, so a fetch past it is OFFSET_NOT_AVAILABLE (retriable),
	// not OFFSET_OUT_OF_RANGE (which would make the client reset).
	OtherAgents bool
	// GroupInitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms:
	// a new group waits this long for more members before its first
	// rebalance. Negative means none; zero takes Kafka's 3s.
	GroupInitialRebalanceDelay time.Duration
	Logger                     *slog.Logger //
}

// Defaults, as a Kafka user would expect them where Kafka has the setting.
const (
	DefaultFlushWindow     = 250 * time.Millisecond
	DefaultFlushBytes      = 8 << 20
	DefaultMaxMessageBytes = 1048588 // Kafka's message.max.bytes
	DefaultCacheBytes      = 512 << 20
)

// DefaultFlushIdle is the commands' --flush-idle (a zero Config.FlushIdle is
// off). Producers wait for their acknowledgements before they send more, so
// once nothing has come for this long, waiting out the window only adds
// latency. It costs more PUTs at low load (README, "Choosing
// --flush-window").
const DefaultFlushIdle = 30 * time.Millisecond

// memoryHeadroom is what an agent needs beside its cache and its flush
// buffers: requests and responses in flight, the replica of the metadata,
// connections, goroutines.
const memoryHeadroom = 96 << 20

// MemoryBudget is the memory an agent with this configuration should need
// under any load: its cache, the objects it holds while writing them
// (backlogObjects sealed and one open), and memoryHeadroom. The commands
// make it the Go runtime's soft memory limit, so that the garbage collector
// keeps the heap near it rather than letting it grow to twice what is live.
func (c Config) MemoryBudget() int64 {
	c.setDefaults()
	return c.CacheBytes + int64(backlogObjects+1)*int64(c.FlushBytes) + memoryHeadroom
}

func (c *Config) setDefaults() {
	if c.FlushWindow <= 0 {
		c.FlushWindow = DefaultFlushWindow
	}
	if c.FlushBytes <= 0 {
		c.FlushBytes = DefaultFlushBytes
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = codec.DefaultMaxRequestBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	if c.ClusterID == "" {
		c.ClusterID = "sluice"
	}
	if c.AgentID == "" {
		c.AgentID = "agent"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.GroupInitialRebalanceDelay == 0 {
		c.GroupInitialRebalanceDelay = 3 * time.Second
	}
}

// Agent is the state every connection shares. It is safe for concurrent use.
type Agent struct {
	cfg   Config
	log   *slog.Logger
	seq   Sequencer
	store objectio.Store
	cache *cache.Cache

	// Lock order: writeMu, then mu.
	mu      sync.RWMutex
	replica *sequencer.State // the durable metadata, applied from updates
	changed chan struct{}    // closed and replaced on every update: wakes long polls

	writeMu sync.Mutex
	writer  *core.Writer
	buffers *flushBuffers // nil when the store keeps the bytes it is given (mem://)
	drained *sync.Cond    // on writeMu: the writer's backlog shrank
	timer   *time.Timer
	timerAt time.Time // the deadline timer is armed for

	metrics metrics

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewAgent starts an agent on top of a sequencer and a store.
func NewAgent(cfg Config, seq Sequencer, store objectio.Store) (*Agent, error) {
	cfg.setDefaults()
	c, err := cache.New(cfg.CacheBytes)
	if err != nil {
		return nil, fmt.Errorf("segment cache: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{
		cfg: cfg, log: cfg.Logger, seq: seq, store: store, cache: c,
		changed: make(chan struct{}),
		// Object keys must never repeat, even across restarts of an agent
		// with the same id: a restarted agent that reused them would
		// overwrite acknowledged data.
		writer: core.NewWriter(cfg.AgentID+"-"+nonce(), core.FlushConfig{Window: cfg.FlushWindow, Idle: cfg.FlushIdle, SizeMax: cfg.FlushBytes}, putAttemptsMax),
		ctx:    ctx, cancel: cancel,
	}
	a.writer.OnCommitted = a.writeThrough
	if objectio.ReleasesData(store) {
		a.buffers = &flushBuffers{size: cfg.FlushBytes, reused: &a.metrics.buffersReused}
		a.writer.AllocateWith(a.buffers.get)
		a.writer.OnDropped = func(o *core.SealedObject) { a.buffers.put(o.Data) }
	}
	a.drained = sync.NewCond(&a.writeMu)
	seq.Follow(a.reset, a.apply)
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.replica == nil {
		cancel()
		c.Close()
		return nil, errors.New("agent: the sequencer closed before it sent its state")
	}
	return a, nil
}

// reset replaces the replica with a state the sequencer sent on a
// (re)subscription. A sequencer that took over recovered every durable
// entry, so its state is never older than the replica, which holds only
// durable entries; an older one would be a bug, and is not served.
func (a *Agent) reset(st *sequencer.State) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.replica != nil && st.Index < a.replica.Index {
		a.log.Error("sequencer sent a state older than the replica; keeping the replica", "state", st.Index, "replica", a.replica.Index)
		return
	}
	a.replica = st
	close(a.changed)
	a.changed = make(chan struct{})
}

// apply applies a durable entry to the replica and wakes long polls.
func (a *Agent) apply(u sequencer.Update) {
	a.mu.Lock()
	if a.replica == nil || u.Index <= a.replica.Index {
		a.mu.Unlock()
		return
	}
	if u.Index != a.replica.Index+1 {
		// Updates from a remote sequencer come in order on one connection
		// after its state; a gap means a bug in the link. The replica
		// stays behind until the link resubscribes.
		a.log.Error("update out of order; ignored", "update", u.Index, "replica", a.replica.Index)
		a.mu.Unlock()
		return
	}
	if err := a.replica.Apply(u.Index, u.Entry); err != nil {
		// The replica and the sequencer apply the same entries with the
		// same code: a difference is a bug that must not be served.
		panic(fmt.Sprintf("agent replica diverged: %v", err))
	}
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// Close flushes what is buffered, waits for outstanding commits (bounded by
// ctx), and releases the agent.
func (a *Agent) Close(ctx context.Context) {
	a.flushNow()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	a.cancel()
	a.writeMu.Lock()
	a.drained.Broadcast() // producers held by back-pressure give up
	a.writeMu.Unlock()
	a.cache.Close()
}

// recycler returns what takes back a flush buffer nothing holds any more,
// for the cache to call; nil when the agent does not recycle buffers.
func (a *Agent) recycler() func([]byte) {
	if a.buffers == nil {
		return nil
	}
	return a.buffers.put
}

// view runs fn with the replica read-locked.
func (a *Agent) view(fn func(st *sequencer.State)) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	fn(a.replica)
}

// changes returns a channel closed at the next durable update.
func (a *Agent) changes() <-chan struct{} {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.changed
}

// submit is Submit with a typed reply.
func submit[R any](a *Agent, body any, done func(R)) {
	a.seq.Submit(body, func(reply any) { done(reply.(R)) })
}

// nonce returns a random hex string naming one incarnation of an agent.
func nonce() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}
