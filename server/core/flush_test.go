package core

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluicedb/sluice/sequencer"
)

var t0 = time.Unix(1000, 0)

func noop(sequencer.BatchResult) {}

func TestFlushSealsWhenTheWindowEnds(t *testing.T) {
	f := NewFlush("agent-x", 250*time.Millisecond, 1<<20)
	if sealed, opened := f.Add(t0, []byte("aaa"), sequencer.BatchCommit{Topic: "t"}, noop); sealed != nil || !opened {
		t.Fatalf("first batch: sealed=%v opened=%v, want an open window", sealed != nil, opened)
	}
	if _, opened := f.Add(t0.Add(100*time.Millisecond), []byte("bb"), sequencer.BatchCommit{Topic: "u", Partition: 3}, noop); opened {
		t.Fatal("second batch inside the window opened a new one")
	}
	if f.Tick(t0.Add(249*time.Millisecond)) != nil {
		t.Fatal("sealed before the window ended")
	}
	o := f.Tick(t0.Add(250 * time.Millisecond))
	if o == nil {
		t.Fatal("not sealed when the window ended")
	}
	if !bytes.Equal(o.Data, []byte("aaabb")) || len(o.Batches) != 2 {
		t.Fatalf("object holds %q with %d batches, want \"aaabb\" with 2", o.Data, len(o.Batches))
	}
	second := o.Batches[1].Commit
	if second.Pos != 3 || second.Len != 2 || second.Topic != "u" || second.Partition != 3 {
		t.Fatalf("second batch located at %d+%d (%s/%d), want 3+2 (u/3)", second.Pos, second.Len, second.Topic, second.Partition)
	}
	if o.Key != "data/agent-x/00000000000000000001" {
		t.Fatalf("key %q", o.Key)
	}
	if f.Tick(t0.Add(time.Hour)) != nil {
		t.Fatal("an empty buffer was sealed")
	}
}

func TestFlushSealsEarlyAtTheByteLimit(t *testing.T) {
	f := NewFlush("a", time.Hour, 10)
	if s, _ := f.Add(t0, make([]byte, 6), sequencer.BatchCommit{}, noop); s != nil {
		t.Fatal("sealed below the limit")
	}
	s, _ := f.Add(t0, make([]byte, 6), sequencer.BatchCommit{}, noop)
	if s == nil || len(s.Data) != 12 {
		t.Fatal("not sealed at the byte limit")
	}
	if _, opened := f.Add(t0, []byte{1}, sequencer.BatchCommit{}, noop); !opened {
		t.Fatal("the batch after a seal did not open a new window")
	}
	if s := f.Seal(); s == nil || s.Key != "data/a/00000000000000000002" {
		t.Fatal("keys do not advance per object")
	}
}

func TestSealedBufferIsNeverReused(t *testing.T) {
	f := NewFlush("a", time.Hour, 1<<20)
	f.Add(t0, []byte("first"), sequencer.BatchCommit{}, noop)
	o := f.Seal()
	f.Add(t0, []byte("XXXXX"), sequencer.BatchCommit{}, noop)
	if string(o.Data) != "first" {
		t.Fatalf("a sealed object's bytes changed to %q after the next Add", o.Data)
	}
}
