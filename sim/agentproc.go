package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/group"
	"github.com/sluicedb/sluice/server/core"
)

// AgentProc is one agent process: the real core.Writer for the write path,
// core.PlanRead and core.CheckLoaded for the read path, and a follow of the
// active sequencer (the real discovery.Follower) with its state replica.
type AgentProc struct {
	w    *World
	name string
	up   bool
	inc  int

	writer *core.Writer
	tickAt time.Time // when the flush deadline event is scheduled for
	fl     *follow
	cache  map[string][]byte
}

func (a *AgentProc) Name() string     { return a.name }
func (a *AgentProc) Incarnation() int { return a.inc }
func (a *AgentProc) Up() bool         { return a.up }

const (
	putAttemptsMax = 3
	commitTimeout  = 500 * time.Millisecond
)

func (a *AgentProc) start() {
	a.up = true
	a.inc++
	a.writer = core.NewWriter(fmt.Sprintf("%s-%d", a.name, a.inc),
		core.FlushConfig{Window: a.w.cfg.FlushWindow, Idle: a.w.cfg.FlushIdle, SizeMax: a.w.cfg.FlushBytes}, putAttemptsMax)
	a.writer.OnCommitted = func(_ *core.SealedObject, cs []core.Committed) {
		for _, c := range cs {
			a.cache[cacheKey(c.Entry)] = c.Bytes
		}
	}
	a.cache = map[string][]byte{}
	a.w.logf("%s starts (incarnation %d)", a.name, a.inc)
	// Agents are configured with the first sequencer's address, as
	// `sluice agent --sequencer` is; the log tells them where it moved.
	a.fl = newFollow(a.w, a, discovery.Config{Seed: a.w.sequencers[0].name}, nil)
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

// sequencer is where requests go: the sequencer being followed, if any.
func (a *AgentProc) sequencer() *SeqProc { return a.fl.following() }

// produce is a producer's request for one batch.
func (a *AgentProc) produce(topic string, partition int32, batch []byte, done func(sequencer.BatchResult)) {
	fail := func(code int16) { done(sequencer.BatchResult{Err: code, BaseOffset: -1}) }
	if a.fl.replica == nil {
		fail(kerr.NotLeaderForPartition.Code)
		return
	}
	if a.fl.replica.Partition(topic, partition) == nil {
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
	deadline, open := a.writer.Append(a.w.clock(), batch, c, done)
	if open && !deadline.Equal(a.tickAt) {
		a.tickAt = deadline
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
		if seq := a.sequencer(); seq != nil {
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
	seq := a.sequencer()
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
	if a.fl.replica == nil {
		done(fetchResult{err: kerr.NotLeaderForPartition.Code})
		return
	}
	pr := &core.PartRead{Topic: topic, Partition: partition, Offset: offset, MaxBytes: 64 << 10}
	core.PlanRead(a.fl.replica, []*core.PartRead{pr}, 256<<10, len(a.w.agents) > 1)
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
			out[i] = core.Served(b, e)
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
						out[i] = core.Served(data, e)
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
	seq := a.sequencer()
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
