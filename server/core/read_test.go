package core

import (
	"bytes"
	"testing"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/sequencer"
)

// storedObject lays batches of the given record counts back to back, as a
// flush does, and returns the object with each batch's index entry.
func storedObject(counts ...int) ([]byte, []sequencer.IndexEntry) {
	var obj []byte
	var entries []sequencer.IndexEntry
	next := int64(100)
	for _, n := range counts {
		b := codectest.Batch(codectest.BatchSpec{Records: n, ValueBytes: 10})
		entries = append(entries, sequencer.IndexEntry{BaseOffset: next, Records: int32(n), Object: "o", Pos: int64(len(obj)), Len: int64(len(b))})
		next += int64(n)
		obj = append(obj, b...)
	}
	return obj, entries
}

func TestCheckObjectFindsDamageAnywhere(t *testing.T) {
	obj, _ := storedObject(3, 1, 5)
	if err := CheckObject("o", obj); err != nil {
		t.Fatalf("CheckObject of an intact object = %v", err)
	}
	flipped := bytes.Clone(obj)
	flipped[len(flipped)-1] ^= 1 // inside the last batch's records
	if err := CheckObject("o", flipped); err == nil {
		t.Error("CheckObject accepted an object whose last batch fails its CRC")
	}
	if err := CheckObject("o", obj[:len(obj)-3]); err == nil {
		t.Error("CheckObject accepted a truncated object")
	}
	if err := CheckObject("o", append(bytes.Clone(obj), 0, 0, 0)); err == nil {
		t.Error("CheckObject accepted trailing bytes")
	}
}

func TestCheckEntryServesOnlyTheWholeBatchTheIndexNames(t *testing.T) {
	obj, entries := storedObject(3, 1, 5)
	for _, e := range entries {
		b, err := CheckEntry(obj, e)
		if err != nil {
			t.Fatalf("CheckEntry(%+v) = %v", e, err)
		}
		if !bytes.Equal(b, obj[e.Pos:e.Pos+e.Len]) {
			t.Fatalf("CheckEntry(%+v) returned other bytes", e)
		}
	}
	two := entries[0]
	two.Len += entries[1].Len
	wrongCount := entries[2]
	wrongCount.Records = 4
	past := entries[2]
	past.Len++
	shifted := entries[1]
	shifted.Pos++
	for name, e := range map[string]sequencer.IndexEntry{"two batches": two, "wrong record count": wrongCount, "past the end": past, "not at a batch": shifted} {
		if _, err := CheckEntry(obj, e); err == nil {
			t.Errorf("%s: CheckEntry accepted %+v", name, e)
		}
	}
}

func TestServedBatchCarriesItsOffsetAndLeavesTheStoredBytes(t *testing.T) {
	obj, entries := storedObject(3, 2)
	before := bytes.Clone(obj)
	for _, e := range entries {
		served := Served(obj[e.Pos:e.Pos+e.Len], e)
		b, err := codec.ParseBatch(served)
		if err != nil {
			t.Fatalf("served batch %+v does not parse: %v", e, err)
		}
		if b.BaseOffset() != e.BaseOffset || b.PartitionLeaderEpoch() != 0 {
			t.Errorf("served batch has offset %d epoch %d, want %d 0", b.BaseOffset(), b.PartitionLeaderEpoch(), e.BaseOffset)
		}
	}
	if !bytes.Equal(obj, before) {
		t.Error("serving wrote into the stored object")
	}
}
