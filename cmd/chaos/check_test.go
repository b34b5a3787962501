package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// cleanHistory is a run in which nothing went wrong: two partitions, five
// records, all acknowledged and read back where their acks said, and
// commits that only move forward.
func cleanHistory() History {
	return History{
		Sent: []string{"p0-1", "p0-2", "p1-1", "p1-2", "p1-3"},
		Acks: map[string]Position{
			"p0-1": {0, 0}, "p1-1": {0, 1}, "p0-2": {0, 2},
			"p1-2": {1, 0}, "p1-3": {1, 1},
		},
		Failures: map[string]string{},
		Reads: []Read{
			{"p0-1", Position{0, 0}}, {"p1-1", Position{0, 1}}, {"p0-2", Position{0, 2}},
			{"p1-2", Position{1, 0}}, {"p1-3", Position{1, 1}},
		},
		HWM: map[int32]int64{0: 3, 1: 2},
		Commits: []CommitSample{
			{1, 0, 1}, {2, 0, 1}, {2, 1, 0}, {3, 0, 3}, {3, 1, 2},
		},
	}
}

func TestCheckPassesACleanHistory(t *testing.T) {
	if v := Check(cleanHistory()); len(v) != 0 {
		t.Errorf("clean history: got violations\n%s", lines(v))
	}
}

// Each case breaks the clean history in one way; the checker must report
// exactly that kind of violation, and nothing else.
func TestCheckFlagsEachViolationKind(t *testing.T) {
	cases := []struct {
		kind   string
		mutate func(h *History)
	}{
		{KindLost, func(h *History) {
			// p0-2 was acked at 0/2 and the log ends before it.
			h.Reads = slices.DeleteFunc(h.Reads, func(r Read) bool { return r.ID == "p0-2" })
			h.HWM[0] = 2
			h.Commits = slices.DeleteFunc(h.Commits, func(c CommitSample) bool { return c.Partition == 0 && c.Offset > 2 })
		}},
		{KindMoved, func(h *History) {
			// The records at 1/0 and 1/1 swapped places.
			h.Reads[3].ID, h.Reads[4].ID = "p1-3", "p1-2"
		}},
		{KindDuplicate, func(h *History) {
			// A retry of p0-1 was written again at 0/3.
			h.Reads = append(h.Reads, Read{"p0-1", Position{0, 3}})
			h.HWM[0] = 4
		}},
		{KindHole, func(h *History) {
			// Partition 1 ends at 6, and offsets 3 and 4 hold nothing.
			h.Sent = append(h.Sent, "p1-4", "p1-5")
			h.Acks["p1-4"], h.Acks["p1-5"] = Position{1, 2}, Position{1, 5}
			h.Reads = append(h.Reads, Read{"p1-4", Position{1, 2}}, Read{"p1-5", Position{1, 5}})
			h.HWM[1] = 6
		}},
		{KindOffsetReused, func(h *History) {
			// Two records were acknowledged at 1/1, and both read there.
			h.Sent = append(h.Sent, "p1-4")
			h.Acks["p1-4"] = Position{1, 1}
			h.Reads = append(h.Reads, Read{"p1-4", Position{1, 1}})
		}},
		{KindUnknown, func(h *History) {
			// The log holds a record nobody sent.
			h.Reads = append(h.Reads, Read{"p9-9", Position{1, 2}})
			h.HWM[1] = 3
		}},
		{KindFailed, func(h *History) {
			// The client gave up on a record that was never written.
			h.Sent = append(h.Sent, "p0-3")
			h.Failures["p0-3"] = "OUT_OF_ORDER_SEQUENCE_NUMBER"
		}},
		{KindUnacked, func(h *History) {
			// A record was still in flight when the liveness bound expired.
			h.Sent = append(h.Sent, "p0-3")
		}},
		{KindUnreadable, func(h *History) {
			// The read-back of partition 0 kept failing at offset 1:
			// p1-1 and p0-2, acknowledged beyond, are not judged lost.
			h.Reads = slices.DeleteFunc(h.Reads, func(r Read) bool { return r.Partition == 0 && r.Offset >= 1 })
			h.ReadTo = map[int32]int64{0: 1}
		}},
		{KindCommitBack, func(h *History) {
			// Partition 0's committed offset went from 3 back to 2.
			h.Commits = append(h.Commits, CommitSample{4, 0, 2})
		}},
		{KindCommitPast, func(h *History) {
			// A commit of offset 5 on a partition whose log ends at 2.
			h.Commits = append(h.Commits, CommitSample{4, 1, 5})
		}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			h := cleanHistory()
			c.mutate(&h)
			got := Check(h)
			if kinds := kindsOf(got); !slices.Equal(kinds, []string{c.kind}) {
				t.Errorf("got violation kinds %v, want exactly [%s]; violations:\n%s", kinds, c.kind, lines(got))
			}
		})
	}
}

// A failed record is allowed in the log once (the client gave up, but the
// write may have happened), and allowed to be absent.
func TestCheckAllowsAFailedRecordInTheLogOnceOrNotAtAll(t *testing.T) {
	for _, written := range []bool{false, true} {
		h := cleanHistory()
		h.Sent = append(h.Sent, "p0-3")
		h.Failures["p0-3"] = "context canceled"
		if written {
			h.Reads = append(h.Reads, Read{"p0-3", Position{0, 3}})
			h.HWM[0] = 4
		}
		got := Check(h)
		if kinds := kindsOf(got); !slices.Equal(kinds, []string{KindFailed}) {
			t.Errorf("failed record written=%v: got kinds %v, want only %s\n%s", written, kinds, KindFailed, lines(got))
		}
	}
}

func TestHolesAreReportedAsRanges(t *testing.T) {
	byPos := map[Position][]string{{0, 0}: {"a"}, {0, 3}: {"b"}, {0, 5}: {"c"}}
	got := holes(0, 8, byPos)
	if want := []string{"1-2", "4", "6-7"}; !slices.Equal(got, want) {
		t.Errorf("holes of offsets {0,3,5} below 8: got %v, want %v", got, want)
	}
}

func kindsOf(vs []Violation) []string {
	set := map[string]bool{}
	for _, v := range vs {
		set[v.Kind] = true
	}
	return slices.Sorted(maps.Keys(set))
}

func lines(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %v\n", v)
	}
	return b.String()
}
