package sim

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/sluicedb/sluice/internal/bugs"
)

// seedsForCI is how many seeds `go test` runs; `make sim SEEDS=N` runs more.
func seedsForCI(t *testing.T) int64 {
	if s, err := strconv.ParseInt(os.Getenv("SLUICE_SIM_SEEDS"), 10, 64); err == nil {
		return s
	}
	if testing.Short() {
		return 100
	}
	return 1000
}

func TestSeedsFindNoViolation(t *testing.T) {
	n := seedsForCI(t)
	tot := RunSeeds(1, n, nil)
	t.Logf("%d seeds, %d client operations, %d failed; %+v", n, tot.Ops, len(tot.Failed), tot.Faults)
	// The seeds must exercise distributed mode's discovery, takeover and
	// fencing, or passing them says little about it.
	if f := tot.Faults; f.Takeovers == 0 || f.Demotions == 0 || f.Isolations == 0 || f.Rediscovered == 0 {
		t.Errorf("the seeds never exercised some of: standby takeover, demotion of a fenced sequencer, isolation of the active one, rediscovery: %+v", f)
	}
	for i, r := range tot.Failed {
		if i == 5 {
			break
		}
		t.Errorf("seed %d: %d violations, first: %s\nreplay: go run ./cmd/sluice sim -seed %d -v", r.Seed, len(r.Violations), r.Violations[0], r.Seed)
	}
}

func TestSameSeedSameTrace(t *testing.T) {
	for _, seed := range []int64{1, 7, 42, 1234} {
		a, b := Run(seed, nil), Run(seed, nil)
		if a.Trace != b.Trace || a.Events != b.Events || a.Ops != b.Ops {
			t.Errorf("seed %d: two runs differ: trace %x vs %x, events %d vs %d", seed, a.Trace, b.Trace, a.Events, b.Events)
		}
	}
	if Run(1, nil).Trace == Run(2, nil).Trace {
		t.Error("seeds 1 and 2 have the same trace: the seed decides nothing")
	}
}

// TestPlantedBugsAreCaught switches on each planted bug in turn and
// requires the checker to catch it within a bounded number of seeds.
func TestPlantedBugsAreCaught(t *testing.T) {
	const seedsMax = 300
	defer bugs.Set(bugs.None)
	for _, b := range bugs.All() {
		bugs.Set(b)
		failed := RunSeeds(1, seedsMax, nil).Failed
		if len(failed) == 0 {
			t.Errorf("planted bug %s: no violation in %d seeds", b, seedsMax)
			continue
		}
		first := failed[0]
		for _, r := range failed {
			if r.Seed < first.Seed {
				first = r
			}
		}
		t.Logf("planted bug %-26s caught by %3d of %d seeds; first seed %d: %s", b, len(failed), seedsMax, first.Seed, firstLine(first.Violations[0]))
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return fmt.Sprint(s)
}

// TestRegressionSeeds replays seeds that once found bugs, each named.
func TestRegressionSeeds(t *testing.T) {
	for _, tc := range []struct {
		seed int64
		bug  string
	}{
		{706, "an agent whose last update was lost never noticed it was behind (fixed: sequencer heartbeats carry the durable index)"},
		{864, "same as 706, on another topology"},
		{1292, "a snapshot sent by a crashed sequencer incarnation was taken as coming from its successor (fixed: stream messages carry the sender's incarnation)"},
		{12682, "a checker bug: an offset commit acknowledged after a later one was taken for offsets going back (fixed: the floor is the highest acknowledged offset)"},
		{6873, "same as 12682"},
	} {
		if r := Run(tc.seed, nil); r.Failed() {
			t.Errorf("seed %d (%s) fails again: %s", tc.seed, tc.bug, r.Violations[0])
		}
	}
}
