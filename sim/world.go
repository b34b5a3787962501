// Package sim is Sluice's deterministic simulator. It runs the real sans-I/O
// cores (the sequencer and the agent's core.Writer and read planning)
// single-threaded in virtual time, with a simulated object store, network and
// Kafka clients, injects crashes, pauses, partitions and storage faults, and
// judges every run with a history checker (checker.go).
//
// One seed decides everything: the topology, the fault rates and every
// random choice, drawn from a single *rand.Rand. The same seed gives the same
// trace hash. Nothing here reads the clock, starts a goroutine or ranges over
// a map where order matters.
package sim

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand"
	"time"
)

// epoch0 is virtual time zero, for the cores that take a time.Time.
var epoch0 = time.Unix(1_700_000_000, 0)

// World is one simulated run.
type World struct {
	Seed int64
	cfg  Config
	rng  *rand.Rand
	now  time.Duration

	events eventQueue
	seqNo  uint64

	trace     uint64 // FNV-1a over every event, in order
	verbose   io.Writer
	liveness  bool // faults have stopped
	stopped   bool
	eventsRun int

	store      *Store
	net        *Network
	sequencers []*SeqProc
	agents     []*AgentProc
	producers  []*Producer
	consumers  []*Consumer
	members    []*Member
	check      *Checker
	ops        int64                    // client operations (produce and fetch attempts)
	paused     map[string]time.Duration // process → paused until (a GC stall)
	faults     FaultCounts
}

type event struct {
	at   time.Duration
	seq  uint64
	what string
	fn   func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// after schedules fn at now+d. what names the event in the trace.
func (w *World) after(d time.Duration, what string, fn func()) {
	w.seqNo++
	heap.Push(&w.events, &event{at: w.now + d, seq: w.seqNo, what: what, fn: fn})
}

// between returns a duration uniformly in [lo, hi].
func (w *World) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(w.rng.Int63n(int64(hi-lo)+1))
}

// chance reports true with probability p; never during the liveness phase
// when it decides a fault.
func (w *World) fault(p float64) bool {
	return !w.liveness && p > 0 && w.rng.Float64() < p
}

func (w *World) logf(format string, args ...any) {
	if w.verbose != nil {
		fmt.Fprintf(w.verbose, "%10.3fms  %s\n", float64(w.now)/float64(time.Millisecond), fmt.Sprintf(format, args...))
	}
}

func (w *World) hash(s string) {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(w.trace >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(s))
	w.trace = h.Sum64()
}

// clock is virtual time as the cores want it.
func (w *World) clock() time.Time { return epoch0.Add(w.now) }
