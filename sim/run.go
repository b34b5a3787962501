package sim

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand"
	"runtime/debug"
	"time"

	"github.com/sluicedb/sluice/sequencer"
)

// Config is one run's topology and fault rates: data, drawn from the seed.
type Config struct {
	Agents, Sequencers, Producers, Consumers, Partitions int
	Members                                              int // consumer-group members
	RecordsPerProducer                                   int

	FlushWindow   time.Duration
	FlushIdle     time.Duration // 0 for half the seeds
	FlushBytes    int
	SnapshotEvery uint64
	GroupDelay    time.Duration // the group coordinator's initial rebalance delay

	StoreLatencyMin, StoreLatencyMax time.Duration
	StoreFailBefore, StoreFailAfter  float64
	NetDelayMin, NetDelayMax         time.Duration
	NetDrop                          float64
	FaultEvery                       time.Duration // mean gap between crashes, pauses, partitions and takeovers

	Safety      time.Duration // how long faults are injected
	LivenessMax time.Duration // how long the fault-free phase may take to finish everything
}

// RandomConfig draws a configuration.
func RandomConfig(rng *rand.Rand) Config {
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int63n(int64(hi-lo)+1)) }
	return Config{
		Agents:             1 + rng.Intn(3),
		Sequencers:         1 + rng.Intn(3),
		Producers:          1 + rng.Intn(3),
		Consumers:          1 + rng.Intn(2),
		Members:            rng.Intn(4),
		Partitions:         1 + rng.Intn(4),
		RecordsPerProducer: 100 + rng.Intn(300),
		FlushWindow:        dur(2*time.Millisecond, 50*time.Millisecond),
		FlushIdle:          time.Duration(rng.Intn(2)) * dur(time.Millisecond, 10*time.Millisecond),
		FlushBytes:         200 + rng.Intn(4000),
		SnapshotEvery:      uint64(2 + rng.Intn(20)),
		GroupDelay:         dur(0, 200*time.Millisecond),
		StoreLatencyMin:    dur(time.Millisecond, 5*time.Millisecond),
		StoreLatencyMax:    dur(5*time.Millisecond, 60*time.Millisecond),
		StoreFailBefore:    rng.Float64() * 0.1,
		StoreFailAfter:     rng.Float64() * 0.1,
		NetDelayMin:        dur(0, time.Millisecond),
		NetDelayMax:        dur(time.Millisecond, 20*time.Millisecond),
		NetDrop:            rng.Float64() * 0.05,
		FaultEvery:         dur(50*time.Millisecond, 800*time.Millisecond),
		Safety:             dur(time.Second, 4*time.Second),
		LivenessMax:        60 * time.Second,
	}
}

// Result is what a run found.
type Result struct {
	Seed       int64
	Config     Config
	Trace      uint64 // same seed, same trace
	Violations []string
	Ops        int64 // client operations
	Events     int
	Virtual    time.Duration
	Faults     FaultCounts
}

// FaultCounts counts what the distributed-mode faults made happen.
type FaultCounts struct {
	Takeovers    int // standbys that took over
	Demotions    int // sequencers fenced by a newer epoch entry
	Rediscovered int // followers that found a sequencer through the log
	Isolations   int // active sequencers cut off from every other process
}

func (c *FaultCounts) add(o FaultCounts) {
	c.Takeovers += o.Takeovers
	c.Demotions += o.Demotions
	c.Rediscovered += o.Rediscovered
	c.Isolations += o.Isolations
}

// Failed reports whether the checker found anything.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// Run simulates one seed. verbose, if set, receives the event log.
func Run(seed int64, verbose io.Writer) (res Result) {
	rng := rand.New(rand.NewSource(seed))
	w := &World{Seed: seed, cfg: RandomConfig(rng), rng: rng, verbose: verbose}
	w.check = newChecker(w)
	w.store = &Store{w: w, objects: map[string][]byte{}, writers: map[uint64]string{}}
	w.net = &Network{w: w, cut: map[[2]string]time.Duration{}}
	w.paused = map[string]time.Duration{}
	defer func() {
		if p := recover(); p != nil {
			w.check.violation("panic: %v\n%s", p, debug.Stack())
		}
		res = Result{Seed: seed, Config: w.cfg, Trace: w.trace, Violations: w.check.violations,
			Ops: w.ops, Events: w.eventsRun, Virtual: w.now, Faults: w.faults}
	}()
	w.logf("seed %d config %+v", seed, w.cfg)
	w.setup()
	for w.events.Len() > 0 && !w.stopped {
		e := heap.Pop(&w.events).(*event)
		w.now = e.at
		w.eventsRun++
		w.hash(fmt.Sprintf("%d %s", e.at, e.what))
		e.fn()
	}
	return res
}

// genesis is the first log entry: the topic the clients use.
func (w *World) genesis() {
	e := &sequencer.Entry{Writer: "genesis", Ops: []sequencer.Op{{CreateTopic: &sequencer.CreateTopicOp{
		Name: topic, ID: [16]byte{1}, Partitions: int32(w.cfg.Partitions)}}}}
	data := sequencer.MarshalEntry(e)
	w.store.objects[sequencer.LogKey(1)] = data
	w.store.noteLog(sequencer.LogKey(1), data)
}

func (w *World) setup() {
	w.genesis()
	for i := 0; i < w.cfg.Sequencers; i++ {
		w.sequencers = append(w.sequencers, &SeqProc{w: w, name: fmt.Sprintf("seq%d", i)})
	}
	for i := 0; i < w.cfg.Agents; i++ {
		w.agents = append(w.agents, &AgentProc{w: w, name: fmt.Sprintf("agent%d", i)})
	}
	for i := 0; i < w.cfg.Producers; i++ {
		p := &Producer{w: w, name: fmt.Sprintf("producer%d", i), budget: w.cfg.RecordsPerProducer}
		for j := 0; j < w.cfg.Partitions; j++ {
			p.parts = append(p.parts, &prodPart{partition: int32(j)})
		}
		w.producers = append(w.producers, p)
	}
	for i := 0; i < w.cfg.Consumers; i++ {
		w.consumers = append(w.consumers, &Consumer{w: w, name: fmt.Sprintf("consumer%d", i),
			pos: make([]int64, w.cfg.Partitions), hwm: make([]int64, w.cfg.Partitions)})
	}
	// The first sequencer takes over at once; the others are standbys.
	w.sequencers[0].start(false)
	for _, s := range w.sequencers[1:] {
		s.start(true)
	}
	for _, a := range w.agents {
		a.start()
	}
	for _, p := range w.producers {
		p := p
		w.after(w.between(0, 50*time.Millisecond), p.name+" starts", p.start)
	}
	for _, c := range w.consumers {
		w.after(w.between(0, 50*time.Millisecond), c.name+" starts", c.loop)
	}
	for i := 0; i < w.cfg.Members; i++ {
		m := &Member{w: w, name: fmt.Sprintf("member%d", i)}
		w.members = append(w.members, m)
		w.after(w.between(0, 500*time.Millisecond), m.name+" starts", m.start)
	}
	w.after(w.between(w.cfg.FaultEvery/2, w.cfg.FaultEvery*3/2), "fault", w.injectFault)
	w.after(w.cfg.Safety, "liveness phase", w.startLiveness)
}

// sequencerNamed is the network's name lookup: the process behind an
// address found in an epoch entry.
func (w *World) sequencerNamed(name string) *SeqProc {
	for _, s := range w.sequencers {
		if s.name == name {
			return s
		}
	}
	return nil
}

// activeSequencer is the harness's omniscient view, never the processes':
// the owner of the newest epoch entry, if it is running and active.
func (w *World) activeSequencer() *SeqProc {
	for _, s := range w.sequencers {
		if s.up && s.writer == w.store.epochOwner && s.Active() {
			return s
		}
	}
	return nil
}

// wake runs fn now, or when p's pause ends.
func (w *World) wake(p proc, fn func()) {
	if until := w.paused[p.Name()]; w.now < until {
		w.after(until-w.now, p.Name()+" wakes", fn)
		return
	}
	fn()
}

// injectFault makes one random thing go wrong, then schedules the next.
func (w *World) injectFault() {
	if w.liveness {
		return
	}
	switch r := w.rng.Float64(); {
	case r < 0.25:
		a := w.agents[w.rng.Intn(len(w.agents))]
		if a.up {
			a.crash()
			w.after(w.between(10*time.Millisecond, 500*time.Millisecond), a.name+" restarts", func() {
				if !a.up {
					a.start()
				}
			})
		}
	case r < 0.4:
		// A sequencer crashes; its process manager restarts it as a
		// standby. If it was active, a standby takes over after a lease.
		s := w.sequencers[w.rng.Intn(len(w.sequencers))]
		if s.up {
			s.crash()
			w.after(w.between(10*time.Millisecond, time.Second), s.name+" restarts", func() {
				if !s.up {
					s.start(true)
				}
			})
		}
	case r < 0.55:
		// The active sequencer is cut off from every other process but
		// not from the store: a standby takes over while it lives on,
		// and it must never acknowledge anything after that.
		if s := w.activeSequencer(); s != nil {
			w.faults.Isolations++
			d := w.between(100*time.Millisecond, 1500*time.Millisecond)
			for _, p := range w.allProcs() {
				if p.Name() != s.name {
					w.net.Partition(s.name, p.Name(), d)
				}
			}
		}
	case r < 0.65 && len(w.members) > 0:
		m := w.members[w.rng.Intn(len(w.members))]
		if m.up {
			m.crash()
			w.after(w.between(10*time.Millisecond, time.Second), m.name+" restarts", func() {
				if !m.up {
					m.start()
				}
			})
		}
	case r < 0.8:
		procs := w.allProcs()
		a, b := procs[w.rng.Intn(len(procs))], procs[w.rng.Intn(len(procs))]
		if a.Name() != b.Name() {
			w.net.Partition(a.Name(), b.Name(), w.between(20*time.Millisecond, 500*time.Millisecond))
		}
	default:
		var p proc = w.agents[w.rng.Intn(len(w.agents))]
		if w.rng.Intn(2) == 0 {
			p = w.sequencers[w.rng.Intn(len(w.sequencers))]
		}
		d := w.between(10*time.Millisecond, 800*time.Millisecond)
		w.paused[p.Name()] = w.now + d
		w.logf("%s pauses for %v", p.Name(), d)
	}
	w.after(w.between(w.cfg.FaultEvery/2, w.cfg.FaultEvery*3/2), "fault", w.injectFault)
}

func (w *World) allProcs() []proc {
	var out []proc
	for _, s := range w.sequencers {
		out = append(out, s)
	}
	for _, a := range w.agents {
		out = append(out, a)
	}
	for _, p := range w.producers {
		out = append(out, p)
	}
	for _, c := range w.consumers {
		out = append(out, c)
	}
	for _, m := range w.members {
		out = append(out, m)
	}
	return out
}

// startLiveness stops every fault and brings everything back; then all
// pending work must complete.
func (w *World) startLiveness() {
	w.logf("liveness phase: faults stop")
	w.liveness = true
	w.net.Heal()
	w.paused = map[string]time.Duration{}
	for _, s := range w.sequencers {
		if !s.up {
			s.start(true)
		}
	}
	for _, a := range w.agents {
		if !a.up {
			a.start()
		}
	}
	for _, m := range w.members {
		if !m.up {
			m.start()
		}
	}
	w.livenessCheck()
}

// livenessCheck ends the run when everything produced is acknowledged and
// every consumer has read to the end, or fails it when that takes too long.
func (w *World) livenessCheck() {
	seq := w.activeSequencer()
	if seq != nil && !seq.seq.InFlight() && w.finished(seq.seq.State()) {
		hwm := make([]int64, w.cfg.Partitions)
		for i := range hwm {
			hwm[i] = seq.seq.State().Partition(topic, int32(i)).Next
		}
		w.check.final(hwm)
		w.checkGroup(seq.seq.State())
		w.stopped = true
		return
	}
	if w.now > w.cfg.Safety+w.cfg.LivenessMax {
		w.check.violation("liveness: work still pending %v after faults stopped: %s", w.cfg.LivenessMax, w.pending())
		w.stopped = true
		return
	}
	w.after(50*time.Millisecond, "liveness check", w.livenessCheck)
}

func (w *World) finished(st *sequencer.State) bool {
	for _, p := range w.producers {
		if !p.done() {
			return false
		}
	}
	for _, c := range w.consumers {
		for i := range c.pos {
			if c.pos[i] < st.Partition(topic, int32(i)).Next {
				return false
			}
		}
	}
	return w.groupSettled(st)
}

// groupSettled reports whether every member is stable in one generation,
// together holding every partition once, with everything committed.
func (w *World) groupSettled(st *sequencer.State) bool {
	if len(w.members) == 0 {
		return true
	}
	held := map[int32]int{}
	gen := w.members[0].generation
	hwm := func(p int32) int64 { return st.Partition(topic, p).Next }
	for _, m := range w.members {
		if !m.caughtUp(hwm) || m.generation != gen {
			return false
		}
		for _, p := range m.assigned {
			held[p]++
		}
	}
	for p := 0; p < w.cfg.Partitions; p++ {
		if held[int32(p)] != 1 {
			return false
		}
	}
	return true
}

// checkGroup checks, at the end, that the acknowledged commits are in the
// durable state (invariant 5).
func (w *World) checkGroup(st *sequencer.State) {
	for p := int32(0); p < int32(w.cfg.Partitions); p++ {
		off, acked := w.check.commits[p]
		if !acked {
			continue
		}
		got, ok := st.Committed(groupName, topic, p)
		if !ok || got.Offset < off {
			w.check.violation("lost commit: partition %d's committed offset is %v (present %v) after %d was acknowledged", p, got.Offset, ok, off)
		}
	}
}

func (w *World) pending() string {
	s := ""
	for _, p := range w.producers {
		for _, pp := range p.parts {
			if pp.inflight != nil {
				s += fmt.Sprintf("%s partition %d batch seq %d unacknowledged; ", p.name, pp.partition, pp.inflight.seq)
			}
		}
		if p.pid < 0 {
			s += p.name + " has no producer id; "
		}
	}
	for _, c := range w.consumers {
		s += fmt.Sprintf("%s at %v; ", c.name, c.pos)
	}
	for _, m := range w.members {
		s += fmt.Sprintf("%v up=%v stable=%v committed=%v; ", m, m.up, m.stable, m.committed)
	}
	return s
}
