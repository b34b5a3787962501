package sequencer

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCommitAssignsDenseOffsetsPerPartition(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 2)
	id := d.submit(&CommitRequest{Object: "data/1", Batches: []BatchCommit{
		batch("t", 0, 3, -1, 0, 0), batch("t", 1, 2, -1, 0, 0), batch("t", 0, 5, -1, 0, 0),
	}})
	d.run()
	got := d.commit(id).Results
	want := []int64{0, 0, 3}
	for i, w := range want {
		if got[i].Err != 0 || got[i].BaseOffset != w {
			t.Errorf("batch %d: got offset %d err %d, want offset %d", i, got[i].BaseOffset, got[i].Err, w)
		}
	}
	if next := d.seq.State().Partition("t", 0).Next; next != 8 {
		t.Errorf("partition 0 high watermark = %d, want 8", next)
	}
}

func TestGroupCommitPutsQueuedRequestsInOneEntry(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	before := len(d.log)
	var ids []uint64
	for i := 0; i < 10; i++ {
		ids = append(ids, d.submit(&CommitRequest{Object: "data/x", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}}))
	}
	d.run()
	if n := len(d.log) - before; n != 1 {
		t.Fatalf("10 queued commits made %d log entries, want 1", n)
	}
	for i, id := range ids {
		if off := d.commit(id).Results[0].BaseOffset; off != int64(i) {
			t.Errorf("commit %d got offset %d, want %d", i, off, i)
		}
	}
}

func TestReplyWaitsForDurableEntry(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	id := d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	rd := d.seq.Ready()
	if rd.Append == nil {
		t.Fatal("no append for a queued commit")
	}
	if len(rd.Replies) != 0 {
		t.Fatal("reply released before its log entry was durable")
	}
	d.append(rd.Append)
	d.run()
	if _, ok := d.replies[id]; !ok {
		t.Fatal("no reply after the entry became durable")
	}
}

func TestIdempotentProducerRules(t *testing.T) {
	cases := []struct {
		name    string
		batches []BatchCommit // committed in order, one request each
		wantErr []int16
		wantOff []int64
	}{
		{"in sequence", []BatchCommit{batch("t", 0, 2, 1, 0, 0), batch("t", 0, 3, 1, 0, 2)},
			[]int16{0, 0}, []int64{0, 2}},
		{"retry gets original offset", []BatchCommit{batch("t", 0, 2, 1, 0, 0), batch("t", 0, 3, 1, 0, 2), batch("t", 0, 2, 1, 0, 0)},
			[]int16{0, 0, 0}, []int64{0, 2, 0}},
		{"gap is out of order", []BatchCommit{batch("t", 0, 2, 1, 0, 0), batch("t", 0, 1, 1, 0, 5)},
			[]int16{0, kerr.OutOfOrderSequenceNumber.Code}, []int64{0, -1}},
		{"first batch must start at 0", []BatchCommit{batch("t", 0, 1, 1, 0, 7)},
			[]int16{kerr.OutOfOrderSequenceNumber.Code}, []int64{-1}},
		{"unknown producer id", []BatchCommit{batch("t", 0, 1, 99, 0, 0)},
			[]int16{kerr.UnknownProducerID.Code}, []int64{-1}},
		{"retry older than the window of 5", []BatchCommit{
			batch("t", 0, 1, 1, 0, 0), batch("t", 0, 1, 1, 0, 1), batch("t", 0, 1, 1, 0, 2), batch("t", 0, 1, 1, 0, 3),
			batch("t", 0, 1, 1, 0, 4), batch("t", 0, 1, 1, 0, 5), batch("t", 0, 1, 1, 0, 0)},
			[]int16{0, 0, 0, 0, 0, 0, kerr.OutOfOrderSequenceNumber.Code}, []int64{0, 1, 2, 3, 4, 5, -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, logStore{}, "a")
			d.mustCreateTopic("t", 1)
			if pid := d.initProducer(); pid != 1 {
				t.Fatalf("first producer id = %d, want 1", pid)
			}
			for i, b := range tc.batches {
				id := d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{b}})
				d.run()
				r := d.commit(id).Results[0]
				off := r.BaseOffset
				if r.Err != 0 {
					off = -1
				}
				if r.Err != tc.wantErr[i] || off != tc.wantOff[i] {
					t.Errorf("batch %d (seq %d): got err %d offset %d, want err %d offset %d",
						i, b.BaseSequence, r.Err, off, tc.wantErr[i], tc.wantOff[i])
				}
			}
		})
	}
}

func TestStaleProducerEpochIsRejected(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	pid := d.initProducer()
	id := d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, pid, 1, 0)}})
	d.run()
	if r := d.commit(id).Results[0]; r.Err != 0 {
		t.Fatalf("epoch 1 first batch: err %d", r.Err)
	}
	id = d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, pid, 0, 1)}})
	d.run()
	if r := d.commit(id).Results[0]; r.Err != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("epoch 0 after epoch 1: err %d, want INVALID_PRODUCER_EPOCH", r.Err)
	}
}

func TestDuplicateWithinOneEntryGetsTheSameOffset(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	pid := d.initProducer()
	a := d.submit(&CommitRequest{Object: "o1", Batches: []BatchCommit{batch("t", 0, 4, pid, 0, 0)}})
	b := d.submit(&CommitRequest{Object: "o2", Batches: []BatchCommit{batch("t", 0, 4, pid, 0, 0)}})
	d.run()
	ra, rb := d.commit(a).Results[0], d.commit(b).Results[0]
	if ra.BaseOffset != 0 || rb.BaseOffset != 0 || !rb.Dup || d.seq.State().Partition("t", 0).Next != 4 {
		t.Fatalf("retry in the same group commit: offsets %d,%d dup=%v hwm=%d; want 0,0 dup hwm 4",
			ra.BaseOffset, rb.BaseOffset, rb.Dup, d.seq.State().Partition("t", 0).Next)
	}
}

func TestAmbiguousAppendThatHappenedIsNotReappended(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	d.failAfter = 1
	id := d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	before := len(d.log)
	d.run()
	if r := d.commit(id).Results[0]; r.Err != 0 || r.BaseOffset != 0 {
		t.Fatalf("after a failed-after append: err %d offset %d, want success at 0", r.Err, r.BaseOffset)
	}
	if len(d.log) != before+1 {
		t.Fatalf("log grew by %d entries, want 1", len(d.log)-before)
	}
	id = d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	d.run()
	if off := d.commit(id).Results[0].BaseOffset; off != 1 {
		t.Fatalf("next commit got offset %d, want 1", off)
	}
}

func TestAppendThatFailedBeforeIsRetried(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	d.mustCreateTopic("t", 1)
	d.failBefore = 3
	id := d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	d.run()
	if r := d.commit(id).Results[0]; r.Err != 0 || r.BaseOffset != 0 {
		t.Fatalf("after failed-before appends: err %d offset %d, want success at 0", r.Err, r.BaseOffset)
	}
}

func TestNewSequencerFencesTheOldOne(t *testing.T) {
	log := logStore{}
	old := newDriver(t, log, "old")
	old.mustCreateTopic("t", 1)
	_ = newDriver(t, log, "new") // recovers and appends its epoch entry
	id := old.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	old.run()
	if !old.fenced || !old.seq.Fenced() {
		t.Fatal("the old sequencer was not fenced by the new epoch entry")
	}
	if r := old.commit(id).Results[0]; r.Err != kerr.NotCoordinator.Code {
		t.Fatalf("fenced sequencer answered err %d, want NOT_COORDINATOR", r.Err)
	}
	id = old.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", 0, 1, -1, 0, 0)}})
	old.run()
	if r := old.commit(id).Results[0]; r.Err != kerr.NotCoordinator.Code {
		t.Fatalf("fenced sequencer accepted more work: err %d", r.Err)
	}
}

func TestRecoveryFromSnapshotPlusLogEqualsLiveState(t *testing.T) {
	log := logStore{}
	d := newDriver(t, log, "a")
	d.mustCreateTopic("t", 3)
	pid := d.initProducer()
	for i := int32(0); i < 20; i++ {
		d.submit(&CommitRequest{Object: "o", Batches: []BatchCommit{batch("t", i%3, 2, pid, 0, (i/3)*2)}})
		d.run()
	}
	live := d.seq.State().Marshal()

	// From the log alone.
	replayed := New(Config{Writer: "b"})
	for i := uint64(1); i <= uint64(len(log)); i++ {
		if err := replayed.Replay(i, log[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := replayed.State().Marshal(); !bytes.Equal(got, live) {
		t.Fatalf("state replayed from the log differs from the live state:\n got %s\nwant %s", got, live)
	}

	// From the newest snapshot plus the entries after it.
	var newest uint64
	for i := range d.snaps {
		newest = max(newest, i)
	}
	if newest == 0 {
		t.Fatal("no snapshot was taken")
	}
	st, err := UnmarshalState(d.snaps[newest])
	if err != nil {
		t.Fatal(err)
	}
	fromSnap := New(Config{Writer: "c"})
	fromSnap.Restore(st)
	for i := newest + 1; i <= uint64(len(log)); i++ {
		if err := fromSnap.Replay(i, log[i]); err != nil {
			t.Fatal(err)
		}
	}
	if got := fromSnap.State().Marshal(); !bytes.Equal(got, live) {
		t.Fatalf("state from snapshot %d + log differs from the live state", newest)
	}

	// An agent replica applying the pushed updates agrees too.
	replica := NewState()
	for _, u := range d.updates {
		if err := replica.Apply(u.Index, u.Entry); err != nil {
			t.Fatal(err)
		}
	}
	if got := replica.Marshal(); !bytes.Equal(got, live) {
		t.Fatal("replica built from updates differs from the live state")
	}
}

func TestTopicRequests(t *testing.T) {
	d := newDriver(t, logStore{}, "a")
	cases := []struct {
		name string
		body any
		want int16
	}{
		{"create", &CreateTopicRequest{Name: "orders", Partitions: 3}, 0},
		{"create again", &CreateTopicRequest{Name: "orders", Partitions: 3}, kerr.TopicAlreadyExists.Code},
		{"bad name", &CreateTopicRequest{Name: "a/b", Partitions: 1}, kerr.InvalidTopicException.Code},
		{"zero partitions", &CreateTopicRequest{Name: "z", Partitions: 0}, kerr.InvalidPartitions.Code},
		{"validate only", &CreateTopicRequest{Name: "v", Partitions: 1, ValidateOnly: true}, 0},
		{"grow", &CreatePartitionsRequest{Name: "orders", Count: 5}, 0},
		{"shrink", &CreatePartitionsRequest{Name: "orders", Count: 2}, kerr.InvalidPartitions.Code},
		{"grow missing", &CreatePartitionsRequest{Name: "nope", Count: 2}, kerr.UnknownTopicOrPartition.Code},
		{"delete", &DeleteTopicRequest{Name: "orders"}, 0},
		{"delete missing", &DeleteTopicRequest{Name: "orders"}, kerr.UnknownTopicOrPartition.Code},
	}
	for _, tc := range cases {
		id := d.submit(tc.body)
		d.run()
		if got := d.replies[id].(*TopicReply).Err; got != tc.want {
			t.Errorf("%s: err %d, want %d", tc.name, got, tc.want)
		}
	}
	if d.seq.State().Topics["v"] != nil {
		t.Error("validate_only created the topic")
	}
}

// TestIdleSequencerProbesAndStepsDownWhenDeposed: a sequencer with nothing
// to write reads the next log index every ProbeEvery, and steps down when
// another sequencer's entry is there; otherwise it stays active.
func TestIdleSequencerProbesAndStepsDownWhenDeposed(t *testing.T) {
	log := logStore{}
	old := newDriver(t, log, "old")
	t0 := time.Unix(1_700_000_000, 0)
	old.seq.Tick(t0)
	if rd := old.seq.Ready(); rd.Probe != 0 {
		t.Fatalf("probed at once: %+v", rd)
	}
	old.seq.Tick(t0.Add(defaultProbeEvery - time.Millisecond))
	if rd := old.seq.Ready(); rd.Probe != 0 {
		t.Fatalf("probed before ProbeEvery: %+v", rd)
	}
	old.seq.Tick(t0.Add(defaultProbeEvery))
	rd := old.seq.Ready()
	if rd.Probe != old.seq.State().Index+1 {
		t.Fatalf("probe %d, want the next index %d", rd.Probe, old.seq.State().Index+1)
	}
	old.seq.ProbeDone(rd.Probe, false, nil) // nobody else wrote
	if !old.seq.Active() {
		t.Fatal("stepped down after a probe that found nothing")
	}

	newDriver(t, log, "new") // takes over: appends its epoch entry
	old.seq.Tick(t0.Add(3 * defaultProbeEvery))
	rd = old.seq.Ready()
	if rd.Probe == 0 {
		t.Fatal("no second probe")
	}
	_, found := log[rd.Probe]
	old.seq.ProbeDone(rd.Probe, found, nil)
	if old.seq.Active() || !old.seq.Fenced() || !old.seq.Ready().Fenced {
		t.Fatal("the deposed sequencer did not step down")
	}
	id := old.submit(&InitProducerRequest{ProducerID: -1})
	old.run()
	if r, ok := old.replies[id].(*InitProducerReply); !ok || r.Err == 0 {
		t.Fatalf("the deposed sequencer answered %+v, want an error", old.replies[id])
	}
}
