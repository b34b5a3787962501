package core

import (
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
