package discovery

import (
	"testing"

	"github.com/sluicedb/sluice/sequencer"
)

// runScan drives a scan over a fake store and counts its reads.
func runScan(t *testing.T, objects map[string][]byte) (sequencer.EpochOp, int) {
	return runScanFrom(t, objects, &EpochScan{})
}

func runScanFrom(t *testing.T, objects map[string][]byte, sc *EpochScan) (sequencer.EpochOp, int) {
	t.Helper()
	reads := 0
	for {
		step := sc.Next()
		if step.Done {
			return sc.Result(), reads
		}
		reads++
		if step.List {
			var keys []string
			for k := range objects {
				if len(k) >= len(step.Prefix) && k[:len(step.Prefix)] == step.Prefix && k > step.StartAfter {
					keys = append(keys, k)
				}
			}
			sc.Listed(keys)
			continue
		}
		var data [][]byte
		var found []bool
		for _, k := range step.Keys {
			d, ok := objects[k]
			data, found = append(data, d), append(found, ok)
		}
		if err := sc.Got(data, found); err != nil {
			t.Fatal(err)
		}
	}
}

func entry(ops ...sequencer.Op) []byte {
	return sequencer.MarshalEntry(&sequencer.Entry{Writer: "w", Ops: ops})
}

func epoch(n uint64, addr string) sequencer.Op {
	return sequencer.Op{Epoch: &sequencer.EpochOp{Epoch: n, Owner: addr + "-x", Addr: addr}}
}

func batch() sequencer.Op {
	return sequencer.Op{InitProducer: &sequencer.InitProducerOp{ProducerID: 1}}
}

func TestScanFindsNewestEpochEntryAfterTheSnapshot(t *testing.T) {
	st := sequencer.NewState()
	st.Index = 3
	st.Epoch = sequencer.EpochOp{Epoch: 1, Addr: "a:1"}
	objects := map[string][]byte{
		sequencer.LogKey(1):  entry(epoch(1, "a:1")),
		sequencer.LogKey(2):  entry(batch()),
		sequencer.LogKey(3):  entry(batch()),
		sequencer.SnapKey(3): st.Marshal(),
		sequencer.LogKey(4):  entry(epoch(2, "b:1")),
		sequencer.LogKey(5):  entry(batch()),
		sequencer.LogKey(6):  entry(batch()),
	}
	sc := &EpochScan{}
	got, reads := runScanFrom(t, objects, sc)
	if sc.Through() != 6 {
		t.Fatalf("scan saw through %d, want 6", sc.Through())
	}
	if got.Addr != "b:1" || got.Epoch != 2 {
		t.Fatalf("got %+v, want epoch 2 at b:1", got)
	}
	// Two lists, then entries 6, 5, 4 in one step: never the ones before
	// the snapshot.
	if reads != 3 {
		t.Fatalf("%d steps, want 3", reads)
	}
}

func TestScanFallsBackToTheSnapshotsEpoch(t *testing.T) {
	st := sequencer.NewState()
	st.Index = 2
	st.Epoch = sequencer.EpochOp{Epoch: 7, Addr: "c:1"}
	objects := map[string][]byte{
		sequencer.LogKey(1):  entry(epoch(7, "c:1")),
		sequencer.LogKey(2):  entry(batch()),
		sequencer.SnapKey(2): st.Marshal(),
		sequencer.LogKey(3):  entry(batch()),
	}
	if got, _ := runScan(t, objects); got.Addr != "c:1" || got.Epoch != 7 {
		t.Fatalf("got %+v, want epoch 7 at c:1", got)
	}
}

func TestScanOfEmptyLogFindsNobody(t *testing.T) {
	if got, _ := runScan(t, map[string][]byte{}); got.Addr != "" {
		t.Fatalf("got %+v on an empty log", got)
	}
}

func TestScanRejectsAMissingListedEntry(t *testing.T) {
	var sc EpochScan
	sc.Next()
	sc.Listed(nil)
	sc.Next()
	sc.Listed([]string{sequencer.LogKey(1)})
	if err := sc.Got([][]byte{nil}, []bool{false}); err == nil {
		t.Fatal("a listed entry that is missing was accepted")
	}
}

func TestScanAfterAReplicaReadsOnlyTheNewEntries(t *testing.T) {
	objects := map[string][]byte{
		sequencer.LogKey(1): entry(epoch(1, "a:1")),
		sequencer.LogKey(2): entry(batch()),
		sequencer.LogKey(3): entry(batch()),
		sequencer.LogKey(4): entry(batch()),
	}
	known := sequencer.EpochOp{Epoch: 1, Addr: "a:1"}
	sc := &EpochScan{After: 3, Known: known}
	got, reads := runScanFrom(t, objects, sc)
	if sc.Through() != 4 {
		t.Fatalf("scan saw through %d, want 4", sc.Through())
	}
	if got != known || reads != 2 {
		t.Fatalf("got %+v in %d steps; want the known epoch after one list and one read", got, reads)
	}
	objects[sequencer.LogKey(5)] = entry(epoch(2, "b:1"))
	if got, _ := runScanFrom(t, objects, &EpochScan{After: 3, Known: known}); got.Addr != "b:1" {
		t.Fatalf("got %+v, want the new epoch at b:1", got)
	}
}

func TestScanReadsBackInBoundedSteps(t *testing.T) {
	objects := map[string][]byte{sequencer.LogKey(1): entry(epoch(1, "a:1"))}
	for i := uint64(2); i <= 100; i++ {
		objects[sequencer.LogKey(i)] = entry(batch())
	}
	got, steps := runScan(t, objects)
	if got.Addr != "a:1" {
		t.Fatalf("got %+v, want a:1", got)
	}
	// Two lists, then 100 entries newest first, scanReadsMax at a time.
	if want := 2 + (100+scanReadsMax-1)/scanReadsMax; steps != want {
		t.Fatalf("%d steps, want %d", steps, want)
	}
}
