package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Position is where a record sits in the topic.
type Position struct {
	Partition int32
	Offset    int64
}

func (p Position) String() string { return fmt.Sprintf("%d/%d", p.Partition, p.Offset) }

// Read is one record of the final read-back.
type Read struct {
	ID string // the producer+sequence identity carried in the key
	Position
}

// CommitSample is one committed group offset seen by one periodic fetch.
// Samples are numbered in the order they were taken; a fetch that saw
// several partitions gives several samples with the same number.
type CommitSample struct {
	Sample    int
	Partition int32
	Offset    int64
}

// History is everything the run recorded that the checker judges. It is
// plain data, so a test can fabricate one.
type History struct {
	Sent     []string            // every record handed to a producer, by identity
	Acks     map[string]Position // identity → the position its ack reported
	Failures map[string]string   // identity → the error the client failed it with
	Reads    []Read              // the final read-back, offsets below the high watermark only
	HWM      map[int32]int64     // per partition, the high watermark at the end
	// ReadTo is, per partition, the offset the read-back got to when it
	// stopped short of the high watermark (a fetch that kept failing):
	// nothing is known at or above it. Complete partitions are absent.
	ReadTo  map[int32]int64
	Commits []CommitSample // the group's committed offsets, in sampling order
}

// Violation kinds. Each names the property it breaks.
const (
	KindLost         = "lost"          // acknowledged, but not in the log
	KindMoved        = "moved"         // acknowledged at one offset, found at another
	KindDuplicate    = "duplicate"     // one record at two offsets
	KindHole         = "hole"          // an offset below the high watermark holds nothing
	KindOffsetReused = "offset-reused" // two records read at one offset
	KindUnknown      = "unknown"       // a record nobody sent
	KindFailed       = "produce-failed"
	KindUnacked      = "unacked" // neither acknowledged nor failed within the liveness bound
	KindCommitBack   = "commit-went-back"
	KindCommitPast   = "commit-past-hwm"
	KindUnreadable   = "unreadable" // the read-back could not get past an offset
)

// Violation is one broken property, with what was expected and seen.
type Violation struct {
	Kind   string
	Detail string
}

func (v Violation) String() string { return v.Kind + ": " + v.Detail }

// Check judges a history. The result is sorted by kind and then detail, so
// that two runs of the checker on one history print the same thing.
//
// Failed records are not required in the log: the client gave up on them,
// and one may or may not have been written. But the run uses unlimited
// retries, so a failure itself is a violation; and a failed record, like
// any other, may be in the log at most once.
func Check(h History) []Violation {
	var out []Violation
	add := func(kind, format string, args ...any) {
		out = append(out, Violation{kind, fmt.Sprintf(format, args...)})
	}
	sent := make(map[string]bool, len(h.Sent))
	for _, id := range h.Sent {
		sent[id] = true
	}

	// Where each record was read, and what each offset holds.
	readAt := map[string][]Position{}
	byPos := map[Position][]string{}
	for _, r := range h.Reads {
		readAt[r.ID] = append(readAt[r.ID], r.Position)
		byPos[r.Position] = append(byPos[r.Position], r.ID)
		if !sent[r.ID] {
			add(KindUnknown, "record %q at %v was never sent", r.ID, r.Position)
		}
	}
	for _, id := range sortedKeys(readAt) {
		if at := readAt[id]; len(at) > 1 {
			add(KindDuplicate, "record %s is at %d offsets: %v", id, len(at), at)
		}
	}
	for _, pos := range sortedPositions(byPos) {
		if ids := byPos[pos]; len(ids) > 1 {
			add(KindOffsetReused, "offset %v was read %d times, holding %v", pos, len(ids), ids)
		}
	}

	// Past where the read-back stopped nothing can be judged, so a record
	// acknowledged there is counted under the stall, not reported lost.
	judged := func(pos Position) bool {
		to, short := h.ReadTo[pos.Partition]
		return !short || pos.Offset < to
	}
	unjudged := map[int32]int{}
	for _, pos := range h.Acks {
		if !judged(pos) {
			unjudged[pos.Partition]++
		}
	}
	for _, p := range sortedKeys(h.ReadTo) {
		add(KindUnreadable, "partition %d could not be read past offset %d (high watermark %d); %d acknowledged records lie beyond",
			p, h.ReadTo[p], h.HWM[p], unjudged[p])
	}

	// Every acknowledged record is in the log at the offset its ack reported.
	for _, id := range sortedKeys(h.Acks) {
		want := h.Acks[id]
		at := readAt[id]
		switch {
		case len(at) == 0 && !judged(want):
		case len(at) == 0:
			add(KindLost, "record %s was acknowledged at %v and is not in the log", id, want)
		case !slices.Contains(at, want):
			add(KindMoved, "record %s was acknowledged at %v and is in the log at %v", id, want, at)
		}
	}

	// Offsets are dense: each partition holds something at every offset
	// below its high watermark.
	for _, p := range sortedKeys(h.HWM) {
		end := h.HWM[p]
		if to, short := h.ReadTo[p]; short {
			end = to
		}
		for _, hole := range holes(p, end, byPos) {
			add(KindHole, "partition %d holds nothing at offsets %s (high watermark %d)", p, hole, h.HWM[p])
		}
	}

	// The client gave up on some records, or never heard back about them.
	failedBy := map[string][]string{}
	for _, id := range sortedKeys(h.Failures) {
		failedBy[h.Failures[id]] = append(failedBy[h.Failures[id]], id)
	}
	for _, msg := range sortedKeys(failedBy) {
		ids := failedBy[msg]
		add(KindFailed, "%d records failed with %q, e.g. %s", len(ids), msg, strings.Join(first(ids, 3), ", "))
	}
	var unacked []string
	for _, id := range h.Sent {
		_, acked := h.Acks[id]
		_, failed := h.Failures[id]
		if !acked && !failed {
			unacked = append(unacked, id)
		}
	}
	if len(unacked) > 0 {
		add(KindUnacked, "%d records were neither acknowledged nor failed within the liveness bound, e.g. %s",
			len(unacked), strings.Join(first(unacked, 3), ", "))
	}

	// Committed group offsets only move forward, and never past the end.
	last := map[int32]CommitSample{}
	for _, c := range h.Commits {
		if prev, ok := last[c.Partition]; ok && c.Offset < prev.Offset {
			add(KindCommitBack, "partition %d: committed offset %d in sample %d, then %d in sample %d",
				c.Partition, prev.Offset, prev.Sample, c.Offset, c.Sample)
		}
		last[c.Partition] = c
		if hwm, ok := h.HWM[c.Partition]; ok && c.Offset > hwm {
			add(KindCommitPast, "partition %d: committed offset %d in sample %d is past the high watermark %d",
				c.Partition, c.Offset, c.Sample, hwm)
		}
	}

	slices.SortStableFunc(out, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Detail, b.Detail))
	})
	return out
}

// holes returns partition p's missing offsets below hwm as ranges ("7" or
// "7-9"): a lost object shows as one line, not a thousand.
func holes(p int32, hwm int64, byPos map[Position][]string) []string {
	var out []string
	for o := int64(0); o < hwm; o++ {
		if len(byPos[Position{p, o}]) > 0 {
			continue
		}
		start := o
		for o+1 < hwm && len(byPos[Position{p, o + 1}]) == 0 {
			o++
		}
		if start == o {
			out = append(out, fmt.Sprint(start))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", start, o))
		}
	}
	return out
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

func sortedPositions[V any](m map[Position]V) []Position {
	return slices.SortedFunc(maps.Keys(m), func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

func first(ids []string, n int) []string {
	return ids[:min(n, len(ids))]
}
