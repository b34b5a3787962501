package bench

import (
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/sequencer"
)

// seqBench drives a *sequencer.Sequencer with no I/O at all: every append
// it asks for succeeds at once. What remains is the commit path's own cost:
// deciding commits (offsets, idempotence checks), encoding the log entry,
// applying it, releasing the replies, and a snapshot every SnapshotEvery
// entries.
type seqBench struct {
	b      *testing.B
	seq    *sequencer.Sequencer
	nextID uint64
	// logBytes counts the entries' encoded size.
	logBytes int64
}

// seqEntriesPerIncarnation bounds one sequencer's history: its partition
// index grows by a batch per commit (there is no retention yet), and its
// snapshots with it, so a benchmark that kept one sequencer for b.N
// entries would measure b.N. Each incarnation takes exactly one snapshot.
const seqEntriesPerIncarnation = 1000

func newSeqBench(b *testing.B, partitions int32) *seqBench {
	s := &seqBench{b: b, seq: sequencer.New(sequencer.Config{Writer: "bench", SnapshotEvery: seqEntriesPerIncarnation})}
	s.seq.Activate()
	s.settle()
	r := s.request(&sequencer.CreateTopicRequest{Name: "t", Partitions: partitions})
	if tr := r.(*sequencer.TopicReply); tr.Err != 0 {
		b.Fatalf("create topic: error %d %s", tr.Err, tr.Message)
	}
	return s
}

// settle carries out Ready until nothing is left and returns the replies.
func (s *seqBench) settle() []sequencer.Reply {
	var replies []sequencer.Reply
	for {
		rd := s.seq.Ready()
		replies = append(replies, rd.Replies...)
		if rd.Append == nil {
			if rd.Verify != 0 || rd.Fenced {
				s.b.Fatalf("sequencer asked to verify %d (fenced %v) though every append succeeded", rd.Verify, rd.Fenced)
			}
			return replies
		}
		s.logBytes += int64(len(rd.Append.Data))
		s.seq.AppendDone(rd.Append.Index, nil)
	}
}

// request steps one request through to its reply.
func (s *seqBench) request(body any) any {
	s.nextID++
	s.seq.Step(sequencer.Request{ID: s.nextID, Body: body})
	replies := s.settle()
	if len(replies) != 1 {
		s.b.Fatalf("%d replies to one request", len(replies))
	}
	return replies[0].Body
}

// BenchmarkSequencerCommit: one iteration is one log entry deciding
// `requests` CommitRequests, each ordering one object with a batch for
// every partition, as an agent's flush does. idempotent batches carry a
// producer id and sequence numbers, so each is checked against the
// producer's window. MB/s is of log entries written.
func BenchmarkSequencerCommit(b *testing.B) {
	for _, idempotent := range []bool{false, true} {
		for _, parts := range []int32{1, 8, 64} {
			for _, requests := range []int{1, 16} {
				name := fmt.Sprintf("partitions=%d/requests=%d/idempotent=%v", parts, requests, idempotent)
				b.Run(name, func(b *testing.B) { benchSequencerCommit(b, parts, requests, idempotent) })
			}
		}
	}
}

// seqRecordsPerBatch is the record count of every committed batch; the
// sequencer never looks inside a batch, so only offsets depend on it.
const seqRecordsPerBatch = 16

func benchSequencerCommit(b *testing.B, parts int32, requests int, idempotent bool) {
	var s *seqBench
	var pid int64 = -1
	var nextSeq []int32 // per partition, for the idempotent producer
	incarnation := func() {
		s = newSeqBench(b, parts)
		pid, nextSeq = -1, make([]int32, parts)
		if idempotent {
			pid = s.request(&sequencer.InitProducerRequest{ProducerID: -1}).(*sequencer.InitProducerReply).ProducerID
		}
	}
	incarnation()
	commit := func() *sequencer.CommitRequest {
		c := &sequencer.CommitRequest{Object: "data/bench", Batches: make([]sequencer.BatchCommit, parts)}
		for p := range parts {
			c.Batches[p] = sequencer.BatchCommit{Topic: "t", Partition: p, Pos: int64(p) * 1000, Len: 1000,
				Records: seqRecordsPerBatch, ProducerID: pid, BaseSequence: -1}
			if idempotent {
				c.Batches[p].BaseSequence = nextSeq[p]
				nextSeq[p] += seqRecordsPerBatch
			}
		}
		return c
	}
	var logBytes int64
	entries := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if entries == seqEntriesPerIncarnation {
			b.StopTimer()
			incarnation()
			entries = 0
			b.StartTimer()
		}
		for range requests {
			s.nextID++
			s.seq.Step(sequencer.Request{ID: s.nextID, Body: commit()})
		}
		before := s.logBytes
		replies := s.settle()
		logBytes += s.logBytes - before
		if len(replies) != requests {
			b.Fatalf("%d replies to %d commits", len(replies), requests)
		}
		for _, r := range replies {
			for _, res := range r.Body.(*sequencer.CommitReply).Results {
				if res.Err != 0 {
					b.Fatalf("commit failed with error %d", res.Err)
				}
			}
		}
		entries++
	}
	b.StopTimer()
	b.SetBytes(logBytes / int64(b.N))
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/secs, "entries/s")
	b.ReportMetric(float64(b.N)*float64(requests)*float64(parts)/secs, "batches/s")
}
