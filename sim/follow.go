package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
)

// follow is the part of a process that follows the active sequencer, as in
// the real agent and standby: the real discovery.Follower decides whom to
// connect to, when to read the log for the newest epoch entry and when a
// standby takes over; this driver carries that out over the simulated
// network and store, and keeps a replica of the state from the snapshot and
// updates the followed sequencer pushes.
type follow struct {
	w     *World
	owner proc
	inc   int // the owner's incarnation this follow belongs to
	f     *discovery.Follower

	replica  *sequencer.State
	source   *SeqProc // whose updates the replica follows, nil when none
	followed *SeqProc // the last sequencer followed, even after a drop
	srcInc   int
	early    map[uint64]sequencer.Update // updates that arrived before their turn
	durable  uint64                      // the newest durable index a heartbeat told of
	behind   time.Duration               // since when the replica lags a heartbeat, 0 if not
	gen      int                         // bumped on every attempt: stale answers are ignored
	// scanned and scannedEpoch: where the last epoch scan got to, and what
	// it found (a follower without a replica scans on from there).
	scanned      uint64
	scannedEpoch sequencer.EpochOp

	onTakeOver func() // a standby's takeover
}

const (
	followTickEvery = 25 * time.Millisecond
	// simLease is shorter than a real deployment's so that runs of a few
	// seconds see many takeovers; pauses of up to 800 ms depose sequencers.
	simLease = 300 * time.Millisecond
	// behindMax is how long a replica may lag what heartbeats report before
	// the follower resubscribes: an update was lost.
	behindMax = 300 * time.Millisecond
)

func newFollow(w *World, owner proc, cfg discovery.Config, onTakeOver func()) *follow {
	cfg.Lease = simLease
	cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	fl := &follow{w: w, owner: owner, inc: owner.Incarnation(), f: discovery.New(w.clock(), cfg),
		early: map[uint64]sequencer.Update{}, onTakeOver: onTakeOver}
	fl.tick()
	return fl
}

func (fl *follow) alive() bool { return fl.owner.Up() && fl.owner.Incarnation() == fl.inc }

// following returns the sequencer to send requests to, or nil.
func (fl *follow) following() *SeqProc {
	if fl.f.Following() {
		return fl.source
	}
	return nil
}

func (fl *follow) tick() {
	if !fl.alive() {
		return
	}
	now := fl.w.clock()
	if fl.f.Following() && fl.replica.Index < fl.durable {
		if fl.behind == 0 {
			fl.behind = fl.w.now
		} else if fl.w.now-fl.behind > behindMax {
			fl.w.logf("%s: replica stuck at %d behind %d; resubscribes", fl.owner.Name(), fl.replica.Index, fl.durable)
			fl.f.Failed(now)
			fl.drop()
		}
	} else {
		fl.behind = 0
	}
	switch act := fl.f.Tick(now); act.Kind {
	case discovery.Connect:
		fl.drop()
		fl.connect(act.Addr)
	case discovery.Disconnect:
		fl.w.logf("%s gives up on %s", fl.owner.Name(), act.Addr)
		fl.drop()
	case discovery.Scan:
		fl.drop()
		sc := &discovery.EpochScan{}
		if fl.replica != nil {
			sc.After, sc.Known = fl.replica.Index, fl.replica.Epoch
		}
		if fl.scanned > sc.After {
			sc.After, sc.Known = fl.scanned, fl.scannedEpoch
		}
		fl.scan(fl.gen, sc)
	case discovery.TakeOver:
		fl.w.faults.Takeovers++
		fl.w.logf("%s takes over", fl.owner.Name())
		fl.onTakeOver()
		return // the follow ends; the owner is a sequencer now
	}
	fl.w.after(followTickEvery, fl.owner.Name()+" follow tick", fl.tick)
}

// drop forgets the source; answers to earlier attempts are ignored.
func (fl *follow) drop() {
	fl.gen++
	fl.source = nil
	fl.behind = 0
}

func (fl *follow) connect(addr string) {
	seq := fl.w.sequencerNamed(addr)
	if seq == nil {
		fl.f.Failed(fl.w.clock())
		return
	}
	gen := fl.gen
	fl.w.logf("%s subscribes to %s", fl.owner.Name(), addr)
	fl.w.net.Send(fl.owner, seq, "subscribe", func() { seq.subscribe(fl, gen) })
}

// refused is a sequencer's answer that it is not active.
func (fl *follow) refused(gen int) {
	if fl.alive() && gen == fl.gen {
		fl.f.Failed(fl.w.clock())
	}
}

// scan reads the newest epoch entry, one store request at a time.
func (fl *follow) scan(gen int, sc *discovery.EpochScan) {
	stale := func() bool { return !fl.alive() || gen != fl.gen }
	fail := func(why string) {
		fl.w.logf("%s: epoch scan fails: %s", fl.owner.Name(), why)
		fl.f.Failed(fl.w.clock())
	}
	step := sc.Next()
	switch {
	case step.Done:
		fl.w.logf("%s: newest epoch %d is %s's", fl.owner.Name(), sc.Result().Epoch, sc.Result().Addr)
		if sc.Through() > fl.scanned {
			fl.scanned, fl.scannedEpoch = sc.Through(), sc.Result()
		}
		fl.f.Scanned(fl.w.clock(), sc.Result().Addr)
	case step.List:
		fl.w.store.List(step.Prefix, func(keys []string, err error) {
			if stale() {
				return
			}
			if err != nil {
				fail(err.Error())
				return
			}
			var after []string
			for _, k := range keys {
				if k > step.StartAfter && strings.HasPrefix(k, step.Prefix) {
					after = append(after, k)
				}
			}
			sc.Listed(after)
			fl.scan(gen, sc)
		})
	default:
		// The real driver reads a step's keys concurrently; here they are
		// all sent at once and gathered as they complete.
		data := make([][]byte, len(step.Keys))
		found := make([]bool, len(step.Keys))
		waiting, failed := len(step.Keys), false
		for i, key := range step.Keys {
			fl.w.store.Get(key, 0, -1, func(d []byte, ok bool, err error) {
				if stale() || failed {
					return
				}
				if err != nil {
					failed = true
					fail(err.Error())
					return
				}
				data[i], found[i] = d, ok
				if waiting--; waiting > 0 {
					return
				}
				if err := sc.Got(data, found); err != nil {
					fail(err.Error())
					return
				}
				fl.scan(gen, sc)
			})
		}
	}
}

// onSnapshot starts following from's incarnation inc (which sent it; the
// process may have restarted since).
func (fl *follow) onSnapshot(from *SeqProc, inc, gen int, data []byte) {
	if !fl.alive() || gen != fl.gen {
		return
	}
	st, err := sequencer.UnmarshalState(data)
	if err != nil {
		fl.w.check.violation("%s got an undecodable snapshot: %v", fl.owner.Name(), err)
		return
	}
	if fl.replica != nil && st.Index < fl.replica.Index {
		// A sequencer that took over recovered every durable entry, and the
		// replica holds only durable entries.
		fl.w.check.violation("%s: %s's snapshot at %d is older than the replica at %d", fl.owner.Name(), from.name, st.Index, fl.replica.Index)
		return
	}
	if fl.followed != nil && fl.followed != from {
		fl.w.faults.Rediscovered++
	}
	fl.followed = from
	fl.replica, fl.source, fl.srcInc, fl.early, fl.durable = st, from, inc, map[uint64]sequencer.Update{}, 0
	fl.f.Heard(fl.w.clock())
	fl.w.logf("%s follows %s from entry %d", fl.owner.Name(), from.name, st.Index)
}

func (fl *follow) fromSource(from *SeqProc, inc int) bool {
	return fl.alive() && fl.replica != nil && from == fl.source && inc == fl.srcInc
}

func (fl *follow) onUpdate(from *SeqProc, inc int, u sequencer.Update) {
	if !fl.fromSource(from, inc) {
		return
	}
	fl.f.Heard(fl.w.clock())
	fl.early[u.Index] = u
	for {
		next, ok := fl.early[fl.replica.Index+1]
		if !ok {
			break
		}
		delete(fl.early, next.Index)
		if err := fl.replica.Apply(next.Index, next.Entry); err != nil {
			fl.w.check.violation("%s replica cannot apply entry %d: %v", fl.owner.Name(), next.Index, err)
			return
		}
	}
	for idx := range fl.early {
		if idx <= fl.replica.Index {
			delete(fl.early, idx)
		}
	}
}

// onHeartbeat learns how far the source's log is durable.
func (fl *follow) onHeartbeat(from *SeqProc, inc int, durable uint64) {
	if fl.fromSource(from, inc) {
		fl.f.Heard(fl.w.clock())
		fl.durable = max(fl.durable, durable)
	}
}

func (fl *follow) String() string { return fmt.Sprintf("%s's follow", fl.owner.Name()) }
