package core

import (
	"testing"
	"time"

	"github.com/sluicedb/sluice/sequencer"
)

// TestWriterBacklogCountsSealedObjectsUntilCommitted: the agent's
// back-pressure bound rests on Backlog, which must count an object from
// its seal until its commit reply, and not after.
func TestWriterBacklogCountsSealedObjectsUntilCommitted(t *testing.T) {
	w := NewWriter("a", FlushConfig{Window: time.Hour, SizeMax: 10}, 3)
	var acked int
	done := func(r sequencer.BatchResult) { acked++ }
	w.Append(t0, make([]byte, 6), sequencer.BatchCommit{Topic: "t"}, done)
	if n := w.Backlog(); n != 0 {
		t.Fatalf("backlog %d with only an open buffer, want 0", n)
	}
	w.Append(t0, make([]byte, 6), sequencer.BatchCommit{Topic: "t"}, done) // seals 12 bytes
	rd := w.Ready()
	if len(rd.Puts) != 1 || w.Backlog() != 12 {
		t.Fatalf("after the seal: %d puts, backlog %d; want 1 and 12", len(rd.Puts), w.Backlog())
	}
	w.PutDone(rd.Puts[0].Key, nil)
	rd = w.Ready()
	if len(rd.Commits) != 1 || w.Backlog() != 12 {
		t.Fatalf("while committing: %d commits, backlog %d; want 1 and 12", len(rd.Commits), w.Backlog())
	}
	w.CommitDone(rd.Commits[0].Object, &sequencer.CommitReply{Results: make([]sequencer.BatchResult, 2)})
	if w.Backlog() != 0 || acked != 2 {
		t.Fatalf("after the commit: backlog %d, %d acked; want 0 and 2", w.Backlog(), acked)
	}
}
