package core

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/sequencer"
)

// TestWriterBacklogCountsSealedObjectsUntilCommitted: the agent's
// back-pressure bound rests on Backlog, which must count an object from
// its seal until its commit reply, and not after.
func TestWriterBacklogCountsSealedObjectsUntilCommitted(t *testing.T) {
	batch := codectest.Batch(codectest.BatchSpec{Records: 1, ValueBytes: 10})
	w := NewWriter("a", FlushConfig{Window: time.Hour, SizeMax: 2 * len(batch)}, 3)
	var acked int
	done := func(r sequencer.BatchResult) { acked++ }
	w.Append(t0, batch, sequencer.BatchCommit{Topic: "t"}, done)
	if n := w.Backlog(); n != 0 {
		t.Fatalf("backlog %d with only an open buffer, want 0", n)
	}
	w.Append(t0, batch, sequencer.BatchCommit{Topic: "t"}, done) // seals the object
	rd := w.Ready()
	if len(rd.Puts) != 1 || w.Backlog() != 2*len(batch) {
		t.Fatalf("after the seal: %d puts, backlog %d; want 1 and %d", len(rd.Puts), w.Backlog(), 2*len(batch))
	}
	w.PutDone(rd.Puts[0].Key, nil)
	rd = w.Ready()
	if len(rd.Commits) != 1 || w.Backlog() != 2*len(batch) {
		t.Fatalf("while committing: %d commits, backlog %d; want 1 and %d", len(rd.Commits), w.Backlog(), 2*len(batch))
	}
	w.CommitDone(rd.Commits[0].Object, &sequencer.CommitReply{Results: make([]sequencer.BatchResult, 2)})
	if w.Backlog() != 0 || acked != 2 {
		t.Fatalf("after the commit: backlog %d, %d acked; want 0 and 2", w.Backlog(), acked)
	}
}

// TestWriterHandsEveryBufferOnOnce: each sealed object's buffer goes to
// exactly one of OnCommitted (the cache takes it) and OnDropped (nothing
// needs it), and only after its batches are answered, or the agent would
// recycle a buffer twice, or one still in use.
func TestWriterHandsEveryBufferOnOnce(t *testing.T) {
	batch := codectest.Batch(codectest.BatchSpec{Records: 1, ValueBytes: 10})
	for _, tc := range []struct {
		name                     string
		putErrs                  int // failed PUTs before the outcome
		reply                    *sequencer.CommitReply
		wantCommitted, wantDrops int
	}{
		{"committed", 0, &sequencer.CommitReply{Results: []sequencer.BatchResult{{}}}, 1, 0},
		{"all duplicates", 0, &sequencer.CommitReply{Results: []sequencer.BatchResult{{Dup: true}}}, 0, 1},
		{"commit timed out", 0, nil, 0, 1},
		{"PUT failed every attempt", 3, nil, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter("a", FlushConfig{Window: time.Hour, SizeMax: len(batch)}, 3)
			var committed, dropped, answered int
			w.OnCommitted = func(*SealedObject, []Committed) { committed++ }
			w.OnDropped = func(*SealedObject) {
				if answered != 1 {
					t.Error("the buffer was dropped before its batch was answered")
				}
				dropped++
			}
			w.Append(t0, batch, sequencer.BatchCommit{Topic: "t"}, func(sequencer.BatchResult) { answered++ })
			key := w.Ready().Puts[0].Key
			for range tc.putErrs {
				w.PutDone(key, errFailedPut)
			}
			if tc.putErrs == 0 {
				w.PutDone(key, nil)
				w.CommitDone(w.Ready().Commits[0].Object, tc.reply)
				w.CommitDone(key, tc.reply) // a late duplicate reply changes nothing
			}
			if committed != tc.wantCommitted || dropped != tc.wantDrops || answered != 1 {
				t.Fatalf("OnCommitted %d, OnDropped %d, batch answered %d times; want %d, %d, 1",
					committed, dropped, answered, tc.wantCommitted, tc.wantDrops)
			}
		})
	}
}

var errFailedPut = errors.New("put failed")
