package discovery

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/sluicedb/sluice/sequencer"
)

// EpochScan finds the newest epoch entry, and so the active sequencer's address,
// in a few requests whatever the length of the log: it lists the snapshots,
// lists the log entries after the newest one (at most about a snapshot
// interval of them), reads those newest first until one holds an epoch op,
// and if none does, reads the snapshot, whose state carries the newest epoch
// before it.
//
// The driver loops: Next says what to read; it reports with Listed or Got.
// Any storage error abandons the scan (the driver reports Failed to its
// Follower and starts a new EpochScan later).
type EpochScan struct {
	// After and Known, if After > 0, say the scanner already knows the
	// log up to entry After, whose newest epoch is Known (a follower's
	// replica): only the entries after it are read, and if none of them is
	// an epoch entry the answer is Known. A follower that lost its
	// sequencer then reads just the few entries since, not the whole log
	// since the last snapshot.
	After uint64
	Known sequencer.EpochOp

	stage   scanStage
	snap    uint64   // newest snapshot index, 0 if none
	entries []uint64 // log entries after snap, ascending
	next    int      // index into entries of the next one to read (counting down)
	result  sequencer.EpochOp
}

type scanStage int

const (
	listSnaps scanStage = iota
	listLog
	readEntries
	readSnap
	scanDone
)

// ScanStep is one step: a List of Prefix after StartAfter, or Gets of Keys,
// which the driver may make concurrently and reports together, in order.
type ScanStep struct {
	List       bool
	Prefix     string
	StartAfter string
	Keys       []string
	Done       bool
}

// scanReadsMax is how many log entries one step reads. A follower with no
// replica may have to read back through hundreds of entries to the last
// epoch entry; one at a time that took seconds on a real store.
const scanReadsMax = 32

// Next returns the read to do, or Done.
func (s *EpochScan) Next() ScanStep {
	if s.stage == listSnaps && s.After > 0 {
		s.snap, s.stage = s.After, listLog
	}
	switch s.stage {
	case listSnaps:
		return ScanStep{List: true, Prefix: sequencer.SnapPrefix}
	case listLog:
		after := ""
		if s.snap > 0 {
			after = sequencer.LogKey(s.snap)
		}
		return ScanStep{List: true, Prefix: sequencer.LogPrefix, StartAfter: after}
	case readEntries:
		var keys []string
		for i := s.next; i >= 0 && len(keys) < scanReadsMax; i-- {
			keys = append(keys, sequencer.LogKey(s.entries[i]))
		}
		return ScanStep{Keys: keys}
	case readSnap:
		return ScanStep{Keys: []string{sequencer.SnapKey(s.snap)}}
	}
	return ScanStep{Done: true}
}

// Listed reports the keys a List returned (all pages).
func (s *EpochScan) Listed(keys []string) {
	switch s.stage {
	case listSnaps:
		for _, k := range keys {
			if i, ok := sequencer.ParseIndexKey(k, sequencer.SnapPrefix); ok && i > s.snap {
				s.snap = i
			}
		}
		s.stage = listLog
	case listLog:
		for _, k := range keys {
			if i, ok := sequencer.ParseIndexKey(k, sequencer.LogPrefix); ok && i > s.snap {
				s.entries = append(s.entries, i)
			}
		}
		slices.Sort(s.entries)
		s.next = len(s.entries) - 1
		s.stage = readEntries
		s.skipIfNoEntries()
	}
}

// Got reports what the Gets of the last step's Keys returned, in order;
// found[i]=false means Keys[i] is missing, which a listed entry never is (the
// log is never deleted from).
func (s *EpochScan) Got(data [][]byte, found []bool) error {
	keys := s.Next().Keys
	if len(data) != len(keys) || len(found) != len(keys) {
		return fmt.Errorf("discovery: %d results for %d reads", len(data), len(keys))
	}
	for i, key := range keys {
		if !found[i] {
			return fmt.Errorf("discovery: %s was listed but is missing", key)
		}
		if s.stage == readSnap {
			// Only the epoch is needed, not the whole state.
			var st struct {
				Epoch sequencer.EpochOp `json:"epoch"`
			}
			if err := json.Unmarshal(data[i], &st); err != nil {
				return fmt.Errorf("discovery: snapshot %d: %w", s.snap, err)
			}
			s.result = st.Epoch
			s.stage = scanDone
			return nil
		}
		e, err := sequencer.UnmarshalEntry(data[i])
		if err != nil {
			return fmt.Errorf("discovery: log entry %d: %w", s.entries[s.next], err)
		}
		for _, op := range e.Ops {
			if op.Epoch != nil {
				s.result = *op.Epoch
				s.stage = scanDone
				return nil
			}
		}
		s.next--
	}
	s.skipIfNoEntries()
	return nil
}

func (s *EpochScan) skipIfNoEntries() {
	if s.next >= 0 {
		return
	}
	if s.After > 0 {
		s.result = s.Known
		s.stage = scanDone
	} else if s.snap > 0 {
		s.stage = readSnap
	} else {
		s.stage = scanDone // an empty log: no sequencer has ever run
	}
}

// Result is the newest epoch entry, once Next says Done. Its Addr is empty
// when no sequencer has taken over yet.
func (s *EpochScan) Result() sequencer.EpochOp { return s.result }

// Through is the newest log entry the scan saw, once Next says Done: a
// next scan with After = Through and Known = Result reads only what came
// since. A follower with no replica (an agent just started) would otherwise
// read back through the log to the last epoch entry on every retry.
func (s *EpochScan) Through() uint64 {
	if n := len(s.entries); n > 0 {
		return s.entries[n-1]
	}
	return s.snap
}
