package main

import (
	"slices"
	"testing"
	"time"
)

func TestFailoverIsMeasuredToTheFirstAckOfARecordSentAfterTheKill(t *testing.T) {
	var f failovers
	t0 := time.Unix(1000, 0)
	f.killed(t0)
	// An ack already on its way from the dead sequencer's last entry.
	f.acked(t0.Add(-time.Millisecond), t0.Add(5*time.Millisecond))
	// The first record sent after the kill, acked once a standby took over.
	f.acked(t0.Add(100*time.Millisecond), t0.Add(1800*time.Millisecond))
	// Later acks belong to no failover.
	f.acked(t0.Add(2*time.Second), t0.Add(2100*time.Millisecond))

	times, unmeasured := f.result()
	if want := []time.Duration{1800 * time.Millisecond}; !slices.Equal(times, want) || unmeasured != 0 {
		t.Errorf("failovers: got %v (unmeasured %d), want %v (unmeasured 0)", times, unmeasured, want)
	}
}

func TestAKillWithNoLaterAckIsCountedUnmeasured(t *testing.T) {
	var f failovers
	t0 := time.Unix(1000, 0)
	f.killed(t0)
	f.killed(t0.Add(15 * time.Second)) // no ack between the two kills
	f.acked(t0.Add(16*time.Second), t0.Add(17*time.Second))
	f.killed(t0.Add(30 * time.Second)) // and none after the last

	times, unmeasured := f.result()
	if len(times) != 1 || times[0] != 2*time.Second || unmeasured != 2 {
		t.Errorf("failovers: got %v (unmeasured %d), want [2s] (unmeasured 2)", times, unmeasured)
	}
}

// The sequencer is killed at every interval that starts and ends inside the
// fault phase (80% of the run); the brief asks for at least 4 kills in the
// 2-minute run and at least 10 in a long one.
func TestSequencerKillsScaleWithTheRun(t *testing.T) {
	for _, c := range []struct {
		run      time.Duration
		killsMin int
	}{{time.Minute, seqKillsMin}, {2 * time.Minute, 4}, {5 * time.Minute, 10}, {10 * time.Minute, 10}} {
		faultPhase := time.Duration(float64(c.run) * (1 - livenessShare))
		every := seqKillInterval(faultPhase)
		kills := int((faultPhase - 1) / every) // kills at every, 2*every, … strictly before the end
		if kills < c.killsMin || every > seqKillEvery {
			t.Errorf("%v run: a kill every %v gives %d kills, want at least %d and at most %v apart",
				c.run, every, kills, c.killsMin, seqKillEvery)
		}
	}
}
