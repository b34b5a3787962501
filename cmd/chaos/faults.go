package main

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Fault timing. Agents die often and come back fast; the active sequencer
// dies less often, and its standby must take over each time.
const (
	agentKillGapMin = 2 * time.Second // between two agent kills
	agentKillGapMax = 5 * time.Second
	agentDownMin    = 500 * time.Millisecond // before a killed agent restarts
	agentDownMax    = 2 * time.Second
	seqKillEvery    = 15 * time.Second // between two kills of the active sequencer, at most
	seqKillsMin     = 4                // a run gets at least this many, however short
	seqDownMin      = time.Second      // before a killed sequencer restarts, as a standby
	seqDownMax      = 3 * time.Second
	// findActiveRetry spaces attempts to find a killable active sequencer
	// (the store is slow to answer, or the previous victim is still down).
	findActiveRetry = 500 * time.Millisecond
)

// seqKillInterval spaces the sequencer kills over the fault phase: every
// seqKillEvery, or closer for a short run so that it still gets
// seqKillsMin. The last kill leaves an interval for its failover.
func seqKillInterval(faultPhase time.Duration) time.Duration {
	return min(seqKillEvery, faultPhase/(seqKillsMin+1))
}

// between returns a uniformly random duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// failovers measures, for each SIGKILL of the active sequencer, the time
// until the first acknowledgement of a record handed to a producer after
// the kill. Records sent before it do not count: their acks may already be
// on the wire from the dead sequencer's last entry, and would make every
// failover look instantaneous. A record sent after the kill can only be
// ordered by a new active sequencer.
type failovers struct {
	mu         sync.Mutex
	killedAt   time.Time // zero when no failover is pending
	times      []time.Duration
	unmeasured int // kills not followed by such an ack before the next kill or the end
}

func (f *failovers) killed(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.killedAt.IsZero() {
		f.unmeasured++
	}
	f.killedAt = at
}

func (f *failovers) acked(sentAt, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.killedAt.IsZero() || sentAt.Before(f.killedAt) {
		return
	}
	f.times = append(f.times, now.Sub(f.killedAt))
	f.killedAt = time.Time{}
}

// result returns the measured failover times, sorted, and how many kills
// got no measurement.
func (f *failovers) result() ([]time.Duration, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	unmeasured := f.unmeasured
	if !f.killedAt.IsZero() {
		unmeasured++
	}
	return slices.Sorted(slices.Values(f.times)), unmeasured
}

// faultStats counts what the fault loops did.
type faultStats struct {
	mu             sync.Mutex
	agentKills     int
	sequencerKills int
	restartErrs    []string
}

func (s *faultStats) count(role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if role == roleSequencer {
		s.sequencerKills++
	} else {
		s.agentKills++
	}
}

func (s *faultStats) kills() (agent, sequencer int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agentKills, s.sequencerKills
}

func (s *faultStats) restartFailed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restartErrs = append(s.restartErrs, err.Error())
}

// faults runs the fault loops until the fault phase ends, then waits for
// every pending restart. Each loop has its own random source, drawn from
// the run's seed, so that the loops' interleaving does not change what
// either draws.
type faults struct {
	c         *cluster
	events    *slog.Logger
	stats     *faultStats
	failovers *failovers
	restarts  sync.WaitGroup
}

func (f *faults) run(ctx context.Context, seed uint64, start, end time.Time) {
	var loops sync.WaitGroup
	loops.Add(1)
	go func() {
		defer loops.Done()
		f.killAgents(ctx, rand.New(rand.NewPCG(seed, 1)), end)
	}()
	if len(f.c.sequencers) > 0 {
		loops.Add(1)
		go func() {
			defer loops.Done()
			f.killSequencers(ctx, rand.New(rand.NewPCG(seed, 2)), start, end)
		}()
	}
	loops.Wait()
	f.restarts.Wait()
}

// killAgents SIGKILLs a random agent every few seconds and restarts it a
// moment later.
func (f *faults) killAgents(ctx context.Context, rng *rand.Rand, end time.Time) {
	for {
		gap := between(rng, agentKillGapMin, agentKillGapMax)
		if time.Now().Add(gap).After(end) || !sleepCtx(ctx, gap) {
			return
		}
		p := f.c.agents[rng.IntN(len(f.c.agents))]
		down := between(rng, agentDownMin, agentDownMax)
		if p.kill() {
			f.stats.count(roleAgent)
			f.restartAfter(ctx, p, down)
		}
	}
}

// killSequencers SIGKILLs the active sequencer at evenly spaced times and
// restarts it, as a standby, a little later. A kill waits until the
// previous victim runs again: with both down there is nothing to fail over
// to, and the failover time would measure our restart delay.
func (f *faults) killSequencers(ctx context.Context, rng *rand.Rand, start, end time.Time) {
	every := seqKillInterval(end.Sub(start))
	for k := 1; ; k++ {
		at := start.Add(time.Duration(k) * every)
		if !at.Before(end) || !sleepCtx(ctx, time.Until(at)) {
			return
		}
		p := f.findKillable(ctx, end)
		if p == nil {
			f.events.Warn("no active sequencer to kill before the fault phase ended", "kill", k)
			return
		}
		killedAt := time.Now()
		if !p.kill() {
			continue // it died meanwhile, by itself; its crash is reported
		}
		f.failovers.killed(killedAt)
		f.stats.count(roleSequencer)
		f.restartAfter(ctx, p, between(rng, seqDownMin, seqDownMax))
	}
}

// findKillable returns the active sequencer once every sequencer process
// runs, or nil if that does not happen before end.
func (f *faults) findKillable(ctx context.Context, end time.Time) *proc {
	for time.Now().Before(end) && ctx.Err() == nil {
		if f.allSequencersRunning() {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			p, op, err := f.c.activeSequencer(actx)
			cancel()
			switch {
			case err != nil:
				f.events.Warn("finding the active sequencer", "err", err)
			case p.running():
				f.events.Info("active sequencer", "proc", p.name, "epoch", op.Epoch, "owner", op.Owner)
				return p
			}
		}
		sleepCtx(ctx, findActiveRetry)
	}
	return nil
}

func (f *faults) allSequencersRunning() bool {
	for _, p := range f.c.sequencers {
		if !p.running() {
			return false
		}
	}
	return true
}

// restartAfter starts p again after down, in the background.
func (f *faults) restartAfter(ctx context.Context, p *proc, down time.Duration) {
	f.restarts.Add(1)
	go func() {
		defer f.restarts.Done()
		sleepCtx(ctx, down)
		if ctx.Err() != nil {
			return
		}
		if err := p.start(); err != nil {
			f.events.Error("restart failed", "proc", p.name, "err", err)
			f.stats.restartFailed(err)
		}
	}()
}
