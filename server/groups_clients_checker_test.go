package server

import (
	"testing"
	"time"
)

// checkGroupRun is what makes the consumer-group client tests meaningful, so
// it is checked itself: a run that keeps every rule passes, and each kind of
// violation is reported under its own name.
func TestGroupRunCheckerFlagsEachViolationAndPassesACleanRun(t *testing.T) {
	const victim = "m1"
	// Two records on partition 0, one on partition 1.
	plan := planRecords(3, []string{"none"}, 2, time.Now())
	plan[0].ackedOff, plan[1].ackedOff, plan[2].ackedOff = 0, 0, 1
	ends := map[int32]int64{0: 2, 1: 1}
	d := func(seq int64, member string, id int) groupDelivery {
		r := plan[id]
		return groupDelivery{seq: seq, member: member, partition: r.Partition, offset: r.ackedOff, key: string(r.Key)}
	}
	c := func(seq int64, member string, partition int32, offset int64) groupCommit {
		return groupCommit{seq: seq, member: member, partition: partition, offset: offset}
	}
	// The clean run: m1 reads record 0 (p0 o0) and dies before committing
	// it; m2 reads it again, then record 2 (p0 o1), and commits; m3 reads
	// record 1 (p1 o0) and commits.
	clean := []groupDelivery{d(1, victim, 0), d(2, "m2", 0), d(3, "m2", 2), d(4, "m3", 1)}
	cleanCommits := []groupCommit{c(5, "m2", 0, 2), c(6, "m3", 1, 1)}

	for _, tc := range []struct {
		name       string
		deliveries []groupDelivery
		commits    []groupCommit
		committed  map[int32]int64
		want       string // the problem kind reported; "" for none
	}{
		{"clean run", clean, cleanCommits, ends, ""},
		{"record never delivered", clean[1:3], cleanCommits[:1], map[int32]int64{0: 2, 1: 1}, "never consumed"},
		{"committed offset below the high watermark", clean, cleanCommits, map[int32]int64{0: 1, 1: 1}, "committed offset"},
		{"record re-read after a commit covering it",
			append(clean[:4:4], d(7, "m3", 0)), cleanCommits, ends, "re-read after commit"},
		{"record committed by two members",
			[]groupDelivery{d(1, "m2", 0), d(2, "m3", 0), d(3, "m2", 2), d(4, "m3", 1)},
			[]groupCommit{c(5, "m2", 0, 2), c(6, "m3", 0, 1), c(7, "m3", 1, 1)}, ends, "committed twice"},
		{"record repeated by a live member",
			[]groupDelivery{d(1, "m2", 0), d(2, "m3", 0), d(3, "m3", 2), d(4, "m3", 1)},
			[]groupCommit{c(5, "m3", 0, 2), c(6, "m3", 1, 1)}, ends, "repeated by a live member"},
		{"record the victim had committed repeated",
			[]groupDelivery{d(1, victim, 0), d(3, "m2", 0), d(4, "m2", 2), d(5, "m3", 1)},
			[]groupCommit{c(2, victim, 0, 1), c(6, "m2", 0, 2), c(7, "m3", 1, 1)}, ends, "repeated after commit"},
		{"record at the wrong offset",
			[]groupDelivery{d(1, "m2", 0), {seq: 2, member: "m2", partition: 0, offset: 0, key: string(plan[2].Key)}, d(3, "m2", 2), d(4, "m3", 1)},
			cleanCommits, ends, "misplaced record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := checkGroupRun(plan, ends, tc.committed, tc.deliveries, tc.commits, victim)
			if tc.want == "" {
				if len(p.kinds) != 0 {
					t.Fatalf("want no problems, got %v", p.byKind)
				}
				return
			}
			if len(p.byKind[tc.want]) == 0 {
				t.Fatalf("want a %q problem, got %v", tc.want, p.byKind)
			}
		})
	}
}
