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
	f := NewFlush("agent-x", FlushConfig{Window: 250 * time.Millisecond, SizeMax: 1 << 20})
	if sealed := f.Add(t0, []byte("aaa"), sequencer.BatchCommit{Topic: "t"}, noop); sealed != nil || !f.Deadline().Equal(t0.Add(250*time.Millisecond)) {
		t.Fatalf("first batch: sealed %d, deadline %v; want an open window ending at 250ms", len(sealed), f.Deadline().Sub(t0))
	}
	f.Add(t0.Add(100*time.Millisecond), []byte("bb"), sequencer.BatchCommit{Topic: "u", Partition: 3}, noop)
	if !f.Deadline().Equal(t0.Add(250 * time.Millisecond)) {
		t.Fatal("a batch inside the window moved its end")
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
	f := NewFlush("a", FlushConfig{Window: time.Hour, SizeMax: 10})
	if s := f.Add(t0, make([]byte, 6), sequencer.BatchCommit{}, noop); s != nil {
		t.Fatal("sealed below the limit")
	}
	// The next batch does not fit beside the first: the open buffer is
	// sealed before it, never grown past the limit.
	s := f.Add(t0, make([]byte, 6), sequencer.BatchCommit{}, noop)
	if len(s) != 1 || len(s[0].Data) != 6 || cap(s[0].Data) > 10 {
		t.Fatalf("sealed %d objects; want the first 6 bytes alone, in a buffer no bigger than the limit", len(s))
	}
	// A batch that fills its own buffer is sealed at once.
	s = f.Add(t0, make([]byte, 4), sequencer.BatchCommit{}, noop)
	if len(s) != 1 || len(s[0].Data) != 10 || len(s[0].Batches) != 2 {
		t.Fatal("not sealed at the byte limit")
	}
	f.Add(t0.Add(time.Second), []byte{1}, sequencer.BatchCommit{}, noop)
	if !f.Deadline().Equal(t0.Add(time.Second + time.Hour)) {
		t.Fatal("the batch after a seal did not open a new window")
	}
	if s := f.Seal(); s == nil || s.Key != "data/a/00000000000000000003" {
		t.Fatal("keys do not advance per object")
	}
	// A batch larger than the limit gets an object of its own.
	f.Add(t0, make([]byte, 3), sequencer.BatchCommit{}, noop)
	s = f.Add(t0, make([]byte, 25), sequencer.BatchCommit{}, noop)
	if len(s) != 2 || len(s[0].Data) != 3 || len(s[1].Data) != 25 || !f.Empty() {
		t.Fatalf("an oversized batch: sealed %d objects, want the open one and its own", len(s))
	}
}

func TestSealedBufferIsNeverReused(t *testing.T) {
	f := NewFlush("a", FlushConfig{Window: time.Hour, SizeMax: 1 << 20})
	f.Add(t0, []byte("first"), sequencer.BatchCommit{}, noop)
	o := f.Seal()
	f.Add(t0, []byte("XXXXX"), sequencer.BatchCommit{}, noop)
	if string(o.Data) != "first" {
		t.Fatalf("a sealed object's bytes changed to %q after the next Add", o.Data)
	}
}

// TestFlushSealsEarlyWhenIdle: with Idle set, the buffer is sealed once no
// batch has come for Idle, and never later than the window.
func TestFlushSealsEarlyWhenIdle(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	f := NewFlush("a", FlushConfig{Window: 250 * time.Millisecond, Idle: 20 * time.Millisecond, SizeMax: 1 << 20})
	f.Add(ms(0), []byte("a"), sequencer.BatchCommit{}, noop)
	f.Add(ms(15), []byte("b"), sequencer.BatchCommit{}, noop)
	if !f.Deadline().Equal(ms(35)) {
		t.Fatalf("deadline %v, want 35ms: 20ms after the last batch", f.Deadline().Sub(t0))
	}
	if f.Tick(ms(34)) != nil {
		t.Fatal("sealed before the idle gap")
	}
	if o := f.Tick(ms(35)); o == nil || len(o.Batches) != 2 {
		t.Fatal("not sealed after the idle gap")
	}
	// A steady trickle keeps the buffer busy: the window still bounds it.
	for at := 300; at < 700; at += 10 {
		if o := f.Tick(ms(at)); o != nil {
			if at < 550 {
				t.Fatalf("sealed at %dms, before the window that opened at 300ms ended", at)
			}
			return
		}
		f.Add(ms(at), []byte("c"), sequencer.BatchCommit{}, noop)
	}
	t.Fatal("a trickle of batches was never sealed")
}
