package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/group"
)

// SeqProc is one sequencer process: the real sequencer.Sequencer, recovered
// from the simulated store alone on every start, driven by events.
type SeqProc struct {
	w      *World
	name   string
	up     bool
	inc    int
	seq    *sequencer.Sequencer
	writer string

	pending map[uint64]pendingReq // request id → who asked
	nextID  uint64
	subs    []*AgentProc // agents receiving updates, in subscription order
	joining []*AgentProc // wait for a moment with no entry in flight
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

// start boots a new incarnation: recover from the store, then take over.
func (p *SeqProc) start() {
	p.up = true
	p.inc++
	p.writer = p.writerName()
	p.seq = p.newSequencer()
	p.pending = map[uint64]pendingReq{}
	p.subs, p.joining = nil, nil
	p.w.logf("%s starts (incarnation %d)", p.name, p.inc)
	p.recover()
	p.heartbeat(p.inc)
}

// heartbeatEvery is how often an active sequencer tells its subscribers how
// far the log is durable, so that an agent whose last update was lost
// notices that it is behind (a real push stream needs keepalives too).
const heartbeatEvery = 100 * time.Millisecond

func (p *SeqProc) heartbeat(inc int) {
	p.w.after(heartbeatEvery, p.name+" heartbeat", func() {
		if !p.up || p.inc != inc {
			return
		}
		p.seq.Tick(p.w.clock()) // group sessions and rebalances
		if p.seq.Active() {
			durable := p.seq.State().Index
			if p.seq.InFlight() {
				durable--
			}
			for _, a := range p.subs {
				a := a
				p.w.net.Send(p, a, "heartbeat", func() { a.onHeartbeat(p, inc, durable) })
			}
		}
		p.heartbeat(inc)
		p.pump()
	})
}

func (p *SeqProc) newSequencer() *sequencer.Sequencer {
	return sequencer.New(sequencer.Config{Writer: p.writer, SnapshotEvery: p.w.cfg.SnapshotEvery,
		Groups: group.Config{MinSessionTimeout: 100 * time.Millisecond, InitialRebalanceDelay: p.w.cfg.GroupDelay}})
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
	p.seq = nil
}

// recover lists the snapshots, restores the newest, replays the log after
// it and appends the epoch entry. Any storage error restarts recovery.
func (p *SeqProc) recover() {
	inc := p.inc
	alive := func() bool { return p.up && p.inc == inc }
	retry := func(why string) {
		p.w.logf("%s recovery retries: %s", p.name, why)
		p.w.after(p.w.between(5*time.Millisecond, 50*time.Millisecond), p.name+" recovery retry", func() {
			if alive() {
				p.seq = p.newSequencer()
				p.recover()
			}
		})
	}
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

// subscribe asks for a state copy and the updates after it.
func (p *SeqProc) subscribe(a *AgentProc) {
	if !p.Active() {
		return
	}
	p.joining = append(p.joining, a)
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
		for _, a := range p.joining {
			a := a
			p.subs = append(p.subs, a)
			p.w.net.Send(p, a, "snapshot", func() { a.onSnapshot(p, inc, data) })
		}
		p.joining = nil
	}
	rd := p.seq.Ready()
	for _, u := range rd.Updates {
		u := u
		for _, a := range p.subs {
			a := a
			p.w.net.Send(p, a, fmt.Sprintf("update %d", u.Index), func() { a.onUpdate(p, inc, u) })
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
	if rd.Fenced {
		p.w.logf("%s is fenced and steps down", p.name)
		p.crash() // a fenced sequencer stops; it may come back as a standby
	}
}
