package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/group"
	"github.com/sluicedb/sluice/server/core"
)

// AgentProc is one agent process: the real core.Writer for the write path,
// core.PlanRead and core.CheckLoaded for the read path, and a replica of the
// sequencer's state built from a snapshot plus pushed updates.
type AgentProc struct {
	w    *World
	name string
	up   bool
	inc  int

	writer  *core.Writer
	replica *sequencer.State
	source  *SeqProc // whose updates the replica follows
	srcInc  int
	early   map[uint64]sequencer.Update // updates that arrived before their turn
	heard   uint64                      // the newest durable index a heartbeat told of
	cache   map[string][]byte
}

func (a *AgentProc) Name() string     { return a.name }
func (a *AgentProc) Incarnation() int { return a.inc }
func (a *AgentProc) Up() bool         { return a.up }

const (
	putAttemptsMax = 3
	commitTimeout  = 500 * time.Millisecond
	resubscribeIn  = 300 * time.Millisecond
)

func (a *AgentProc) start() {
	a.up = true
	a.inc++
	a.writer = core.NewWriter(fmt.Sprintf("%s-%d", a.name, a.inc), a.w.cfg.FlushWindow, a.w.cfg.FlushBytes, putAttemptsMax)
	a.writer.OnCommitted = func(cs []core.Committed) {
		for _, c := range cs {
			a.cache[cacheKey(c.Entry)] = c.Bytes
		}
	}
	a.replica, a.source, a.early = nil, nil, map[uint64]sequencer.Update{}
	a.cache = map[string][]byte{}
	a.w.logf("%s starts (incarnation %d)", a.name, a.inc)
	a.subscribe()
	a.watchSubscription(a.inc)
}

func (a *AgentProc) crash() {
	if !a.up {
		return
	}
	a.w.logf("%s crashes", a.name)
	a.up = false
	a.inc++
}

func cacheKey(e sequencer.IndexEntry) string { return fmt.Sprintf("%s@%d", e.Object, e.Pos) }

// subscribe finds the active sequencer (as a real agent would, from the
// newest epoch entry) and asks it for a state copy and updates.
func (a *AgentProc) subscribe() {
	if seq := a.w.activeSequencer(); seq != nil {
		a.w.net.Send(a, seq, "subscribe", func() { seq.subscribe(a) })
	}
}

// watchSubscription resubscribes whenever updates stop flowing: the source
// died or was fenced, or an update was lost and left a gap.
func (a *AgentProc) watchSubscription(inc int) {
	a.w.after(resubscribeIn, a.name+" subscription check", func() {
		if !a.up || a.inc != inc {
			return
		}
		if a.source == nil || !a.source.Active() || a.source.inc != a.srcInc || a.w.activeSequencer() != a.source || len(a.early) > 0 || a.replica.Index < a.heard {
			a.w.logf("%s resubscribes", a.name)
			a.subscribe()
		}
		a.watchSubscription(inc)
	})
}

// onSnapshot starts following from's incarnation inc (which sent it; the
// process may have restarted since).
func (a *AgentProc) onSnapshot(from *SeqProc, inc int, data []byte) {
	st, err := sequencer.UnmarshalState(data)
	if err != nil {
		a.w.check.violation("%s got an undecodable snapshot: %v", a.name, err)
		return
	}
	if a.replica != nil && st.Index < a.replica.Index {
		a.w.logf("%s ignores an older snapshot (%d < %d)", a.name, st.Index, a.replica.Index)
		return
	}
	a.replica, a.source, a.srcInc, a.early, a.heard = st, from, inc, map[uint64]sequencer.Update{}, 0
	a.w.logf("%s follows %s from entry %d", a.name, from.name, st.Index)
}

func (a *AgentProc) onUpdate(from *SeqProc, inc int, u sequencer.Update) {
	if a.replica == nil || from != a.source || inc != a.srcInc {
		return
	}
	a.early[u.Index] = u
	for {
		next, ok := a.early[a.replica.Index+1]
		if !ok {
			break
		}
		delete(a.early, next.Index)
		if err := a.replica.Apply(next.Index, next.Entry); err != nil {
			a.w.check.violation("%s replica cannot apply entry %d: %v", a.name, next.Index, err)
			a.crash()
			return
		}
	}
	for idx := range a.early {
		if idx <= a.replica.Index {
			delete(a.early, idx)
		}
	}
}

// onHeartbeat learns how far the source's log is durable.
func (a *AgentProc) onHeartbeat(from *SeqProc, inc int, durable uint64) {
	if a.replica != nil && from == a.source && inc == a.srcInc {
		a.heard = max(a.heard, durable)
	}
}

// produce is a producer's request for one batch.
func (a *AgentProc) produce(topic string, partition int32, batch []byte, done func(sequencer.BatchResult)) {
	fail := func(code int16) { done(sequencer.BatchResult{Err: code, BaseOffset: -1}) }
	if a.replica == nil {
		fail(kerr.NotLeaderForPartition.Code)
		return
	}
	if a.replica.Partition(topic, partition) == nil {
		fail(kerr.UnknownTopicOrPartition.Code)
		return
	}
	b, err := codec.ParseBatch(batch)
	if err != nil {
		fail(kerr.CorruptMessage.Code)
		return
	}
	c := sequencer.BatchCommit{Topic: topic, Partition: partition, Records: b.NumRecords(), MaxTimestamp: b.MaxTimestamp(),
		ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(), BaseSequence: b.BaseSequence()}
	deadline, armed := a.writer.Append(a.w.clock(), batch, c, done)
	if armed {
		inc := a.inc
		a.w.after(deadline.Sub(a.w.clock()), a.name+" flush window ends", func() {
			if a.up && a.inc == inc {
				a.writer.Tick(a.w.clock())
				a.pump()
			}
		})
	}
	a.pump()
}

// pump carries out the Writer's Ready: PUTs to the store, commits to the
// active sequencer (in order), each with a timeout.
func (a *AgentProc) pump() {
	inc := a.inc
	alive := func() bool { return a.up && a.inc == inc }
	rd := a.writer.Ready()
	for _, o := range rd.Puts {
		key := o.Key
		a.w.store.Put(key, o.Data, false, func(err error) {
			a.w.wake(a, func() {
				if alive() {
					a.writer.PutDone(key, err)
					a.pump()
				}
			})
		})
	}
	for _, req := range rd.Commits {
		key, req := req.Object, req
		seq := a.w.activeSequencer()
		if seq != nil {
			a.w.net.Send(a, seq, "commit "+key, func() {
				seq.submit(a, req, func(reply any) {
					if alive() {
						a.writer.CommitDone(key, reply.(*sequencer.CommitReply))
						a.pump()
					}
				})
			})
		}
		a.w.after(commitTimeout, a.name+" commit timeout "+key, func() {
			if alive() {
				a.writer.CommitDone(key, nil) // no-op if the reply came
				a.pump()
			}
		})
	}
}

// initProducer forwards InitProducerId to the sequencer.
func (a *AgentProc) initProducer(done func(*sequencer.InitProducerReply)) {
	seq := a.w.activeSequencer()
	if seq == nil {
		return
	}
	inc := a.inc
	a.w.net.Send(a, seq, "init producer", func() {
		seq.submit(a, &sequencer.InitProducerRequest{ProducerID: -1}, func(reply any) {
			if a.up && a.inc == inc {
				done(reply.(*sequencer.InitProducerReply))
			}
		})
	})
}

// fetchResult is what a consumer gets back.
type fetchResult struct {
	err     int16
	hwm     int64
	batches [][]byte
}

// fetch serves one partition of a Fetch: plan from the replica, then the
// bytes from the cache or the store.
func (a *AgentProc) fetch(topic string, partition int32, offset int64, done func(fetchResult)) {
	if a.replica == nil {
		done(fetchResult{err: kerr.NotLeaderForPartition.Code})
		return
	}
	pr := &core.PartRead{Topic: topic, Partition: partition, Offset: offset, MaxBytes: 64 << 10}
	core.PlanRead(a.replica, []*core.PartRead{pr}, 256<<10, len(a.w.agents) > 1)
	if pr.Err != 0 {
		done(fetchResult{err: pr.Err})
		return
	}
	out := make([][]byte, len(pr.Entries))
	missing := 0
	failed := false
	inc := a.inc
	finish := func() {
		if failed {
			done(fetchResult{err: kerr.KafkaStorageError.Code})
			return
		}
		done(fetchResult{hwm: pr.HWM, batches: out})
	}
	for i, e := range pr.Entries {
		if b, ok := a.cache[cacheKey(e)]; ok {
			out[i] = b
			continue
		}
		missing++
		i, e := i, e
		a.w.store.Get(e.Object, e.Pos, e.Len, func(data []byte, found bool, err error) {
			a.w.wake(a, func() {
				if !a.up || a.inc != inc {
					return
				}
				switch {
				case err != nil:
					failed = true
				case !found:
					a.w.check.violation("%s: indexed object %s is missing from the store", a.name, e.Object)
					failed = true
				default:
					if cerr := core.CheckLoaded(data, e); cerr != nil {
						a.w.check.violation("%s: %v", a.name, cerr)
						failed = true
					} else {
						a.cache[cacheKey(e)] = data
						out[i] = data
					}
				}
				missing--
				if missing == 0 {
					finish()
				}
			})
		})
	}
	if missing == 0 {
		finish()
	}
}

// group forwards a consumer-group request to the active sequencer, where
// the coordinator lives, as the real agent does.
func (a *AgentProc) group(client string, req kmsg.Request, done func(kmsg.Response)) {
	seq := a.w.activeSequencer()
	if seq == nil {
		return // the member times out and retries
	}
	var body any = req
	if join, ok := req.(*kmsg.JoinGroupRequest); ok {
		body = &sequencer.JoinGroup{Client: group.Client{ID: client, Host: "/" + client}, Req: join}
	}
	inc := a.inc
	a.w.net.Send(a, seq, "group "+kmsg.NameForKey(req.Key()), func() {
		seq.submit(a, body, func(reply any) {
			if a.up && a.inc == inc {
				done(reply.(kmsg.Response))
			}
		})
	})
}
