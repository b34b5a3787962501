package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/group"
)

// SeqProc is one sequencer process: the real sequencer.Sequencer, recovered
// from the simulated store alone on every start, driven by events. A standby
// follows the active sequencer like an agent does, and takes over when the
// discovery.Follower says so.
type SeqProc struct {
	w      *World
	name   string
	up     bool
	inc    int
	seq    *sequencer.Sequencer // nil while a standby
	fl     *follow              // a standby's following, nil once it takes over
	writer string

	pending map[uint64]pendingReq // request id → who asked
	nextID  uint64
	subs    []*follow    // followers receiving updates, in subscription order
	joining []joiningSub // wait for a moment with no entry in flight
}

type joiningSub struct {
	fl  *follow
	gen int
}

type pendingReq struct {
	agent *AgentProc
	fn    func(reply any)
}

func (p *SeqProc) Name() string       { return p.name }
func (p *SeqProc) Incarnation() int   { return p.inc }
func (p *SeqProc) Up() bool           { return p.up }
func (p *SeqProc) Active() bool       { return p.up && p.seq != nil && p.seq.Active() }
func (p *SeqProc) String() string     { return p.name }
func (p *SeqProc) writerName() string { return fmt.Sprintf("%s.%d", p.name, p.inc) }

// start boots a new incarnation. A standby follows the active sequencer
// until its Follower decides to take over; otherwise (the first sequencer
// of a cluster, as `sluice sequencer` without --standby) it takes over at
// once.
func (p *SeqProc) start(standby bool) {
	p.up = true
	p.inc++
	p.writer = p.writerName()
	p.seq, p.fl = nil, nil
	p.pending = map[uint64]pendingReq{}
	p.subs, p.joining = nil, nil
	p.w.logf("%s starts (incarnation %d, standby %v)", p.name, p.inc, standby)
	if standby {
		p.fl = newFollow(p.w, p, discovery.Config{Self: p.name, Standby: true}, p.takeOver)
		return
	}
	p.takeOver()
}

// takeOver recovers and appends the epoch entry. A standby starts from its
// replica and replays only the entries after it.
func (p *SeqProc) takeOver() {
	p.seq = p.newSequencer()
	p.heartbeat(p.inc)
	if p.fl != nil && p.fl.replica != nil {
		replica := p.fl.replica
		p.fl = nil
		p.seq.Restore(replica)
		inc := p.inc
		p.replayFrom(replica.Index+1, func() bool { return p.up && p.inc == inc }, p.retryRecovery(inc))
		return
	}
	p.fl = nil
	p.recover()
}

// heartbeatEvery is how often an active sequencer tells its subscribers how
// far the log is durable, so that a follower hears from it while nothing is
// written and notices when an update was lost (a real push stream needs
// keepalives too). It also drives the sequencer's clock.
const heartbeatEvery = 100 * time.Millisecond

func (p *SeqProc) heartbeat(inc int) {
	p.w.after(heartbeatEvery, p.name+" heartbeat", func() {
		if !p.up || p.inc != inc || p.seq == nil {
			return
		}
		p.seq.Tick(p.w.clock()) // group sessions and rebalances, probes
		if p.seq.Active() {
			durable := p.seq.State().Index
			if p.seq.InFlight() {
				durable--
			}
			for _, fl := range p.subs {
				fl := fl
				p.w.net.Send(p, fl.owner, "heartbeat", func() { fl.onHeartbeat(p, inc, durable) })
			}
		}
		p.heartbeat(inc)
		p.pump()
	})
}

func (p *SeqProc) newSequencer() *sequencer.Sequencer {
	return sequencer.New(sequencer.Config{Writer: p.writer, Addr: p.name, SnapshotEvery: p.w.cfg.SnapshotEvery,
		ProbeEvery: 200 * time.Millisecond,
		Groups:     group.Config{MinSessionTimeout: 100 * time.Millisecond, InitialRebalanceDelay: p.w.cfg.GroupDelay}})
}

// crash loses everything in memory; requests in flight in the store still
// land or not, as they would.
func (p *SeqProc) crash() {
	if !p.up {
		return
	}
	p.w.logf("%s crashes", p.name)
	p.up = false
	p.inc++
	p.seq, p.fl = nil, nil
}

// recover lists the snapshots, restores the newest, replays the log after
// it and appends the epoch entry. Any storage error restarts recovery.
func (p *SeqProc) recover() {
	inc := p.inc
	alive := func() bool { return p.up && p.inc == inc }
	retry := p.retryRecovery(inc)
	p.w.store.List(sequencer.SnapPrefix, func(keys []string, err error) {
		if !alive() {
			return
		}
		if err != nil {
			retry("list snapshots: " + err.Error())
			return
		}
		var newest uint64
		for _, k := range keys {
			if i, ok := sequencer.ParseIndexKey(k, sequencer.SnapPrefix); ok && i > newest {
				newest = i
			}
		}
		if newest == 0 {
			p.replayFrom(1, alive, retry)
			return
		}
		p.w.store.Get(sequencer.SnapKey(newest), 0, -1, func(data []byte, found bool, err error) {
			if !alive() {
				return
			}
			if err != nil || !found {
				retry(fmt.Sprintf("read snapshot %d: found=%v err=%v", newest, found, err))
				return
			}
			st, err := sequencer.UnmarshalState(data)
			if err != nil {
				p.w.check.violation("snapshot %d does not decode: %v", newest, err)
				return
			}
			p.seq.Restore(st)
			p.replayFrom(newest+1, alive, retry)
		})
	})
}

// retryRecovery returns what a failed recovery read does: start recovery
// over, from the store alone, after a pause.
func (p *SeqProc) retryRecovery(inc int) func(string) {
	return func(why string) {
		p.w.logf("%s recovery retries: %s", p.name, why)
		p.w.after(p.w.between(5*time.Millisecond, 50*time.Millisecond), p.name+" recovery retry", func() {
			if p.up && p.inc == inc {
				p.seq = p.newSequencer()
				p.recover()
			}
		})
	}
}

func (p *SeqProc) replayFrom(index uint64, alive func() bool, retry func(string)) {
	p.w.store.Get(sequencer.LogKey(index), 0, -1, func(data []byte, found bool, err error) {
		if !alive() {
			return
		}
		if err != nil {
			retry(fmt.Sprintf("read entry %d: %v", index, err))
			return
		}
		if !found {
			p.w.logf("%s recovered through entry %d; taking over", p.name, index-1)
			p.seq.Activate()
			p.pump()
			return
		}
		if err := p.seq.Replay(index, data); err != nil {
			p.w.check.violation("%s cannot replay the log: %v", p.name, err)
			p.crash()
			return
		}
		p.replayFrom(index+1, alive, retry)
	})
}

// submit is an agent's request arriving. A sequencer still recovering
// drops it: the agent times out and retries.
func (p *SeqProc) submit(from *AgentProc, body any, fn func(reply any)) {
	if p.seq == nil || !p.seq.Activated() {
		return
	}
	p.nextID++
	p.pending[p.nextID] = pendingReq{agent: from, fn: fn}
	p.seq.Tick(p.w.clock())
	p.seq.Step(sequencer.Request{ID: p.nextID, Body: body})
	p.pump()
}

// subscribe asks for a state copy and the updates after it. A sequencer
// that is not active says so, and the follower looks elsewhere.
func (p *SeqProc) subscribe(fl *follow, gen int) {
	if !p.Active() {
		p.w.net.Send(p, fl.owner, "not active", func() { fl.refused(gen) })
		return
	}
	p.joining = append(p.joining, joiningSub{fl: fl, gen: gen})
	p.pump()
}

// pump carries out the sequencer's Ready until it has nothing more to do.
func (p *SeqProc) pump() {
	if !p.up || p.seq == nil {
		return
	}
	inc := p.inc
	if len(p.joining) > 0 && p.seq.Active() && !p.seq.InFlight() {
		data := p.seq.State().Marshal()
		for _, j := range p.joining {
			j := j
			p.subs = append(p.subs, j.fl)
			p.w.net.Send(p, j.fl.owner, "snapshot", func() { j.fl.onSnapshot(p, inc, j.gen, data) })
		}
		p.joining = nil
	}
	rd := p.seq.Ready()
	for _, u := range rd.Updates {
		u := u
		for _, fl := range p.subs {
			fl := fl
			p.w.net.Send(p, fl.owner, fmt.Sprintf("update %d", u.Index), func() { fl.onUpdate(p, inc, u) })
		}
	}
	for _, r := range rd.Replies {
		pr, ok := p.pending[r.ID]
		if !ok {
			continue
		}
		delete(p.pending, r.ID)
		p.w.check.sequencerReply(p, r)
		reply := r.Body
		p.w.net.Send(p, pr.agent, "reply", func() { pr.fn(reply) })
	}
	if rd.Snapshot != nil {
		w := rd.Snapshot
		p.w.store.Put(sequencer.SnapKey(w.Index), w.Data, true, func(error) {})
	}
	if rd.Append != nil {
		w := rd.Append
		p.w.store.Put(sequencer.LogKey(w.Index), w.Data, true, func(err error) {
			p.w.wake(p, func() {
				if !p.up || p.inc != inc {
					return
				}
				if err != nil && !errors.Is(err, objectio.ErrExists) {
					p.w.logf("%s append %d failed: %v", p.name, w.Index, err)
				}
				p.seq.AppendDone(w.Index, err)
				p.pump()
			})
		})
	}
	if rd.Verify != 0 {
		index := rd.Verify
		p.w.store.Get(sequencer.LogKey(index), 0, -1, func(data []byte, found bool, err error) {
			p.w.wake(p, func() {
				if !p.up || p.inc != inc {
					return
				}
				p.seq.VerifyDone(index, data, found, err)
				p.pump()
			})
		})
	}
	if rd.Probe != 0 {
		index := rd.Probe
		p.w.store.Get(sequencer.LogKey(index), 0, -1, func(_ []byte, found bool, err error) {
			p.w.wake(p, func() {
				if !p.up || p.inc != inc {
					return
				}
				p.seq.ProbeDone(index, found, err)
				p.pump()
			})
		})
	}
	if rd.Fenced {
		// As the real process does: stop acknowledging, drop every
		// connection, and follow the new sequencer as a standby.
		p.w.faults.Demotions++
		p.w.logf("%s is fenced and demotes itself to standby", p.name)
		p.crash()
		p.start(true)
	}
}
