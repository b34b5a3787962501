package discovery

import (
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func expect(t *testing.T, f *Follower, now time.Time, kind ActionKind, addr string) {
	t.Helper()
	got := f.Tick(now)
	if got.Kind != kind || got.Addr != addr {
		t.Fatalf("at %v: got action %+v, want kind %d addr %q", now.Sub(t0), got, kind, addr)
	}
}

func cfg(standby bool) Config {
	return Config{Seed: "seq0:1", Self: "seq1:1", Lease: time.Second, RetryMin: 100 * time.Millisecond, RetryMax: 100 * time.Millisecond, Standby: standby}
}

func TestAgentConnectsToSeedThenFollowsTheLogWhenItDies(t *testing.T) {
	c := cfg(false)
	c.Self = ""
	f := New(at(0), c)
	expect(t, f, at(0), Connect, "seq0:1")
	expect(t, f, at(10), Wait, "")
	f.Heard(at(20))
	if !f.Following() {
		t.Fatal("not following after Heard")
	}
	expect(t, f, at(900), Wait, "")
	// The connection breaks: back off, then read the log rather than
	// dialling the dead address again.
	f.Failed(at(1000))
	expect(t, f, at(1050), Wait, "")
	expect(t, f, at(1100), Scan, "")
	f.Scanned(at(1110), "seq1:1")
	expect(t, f, at(1110), Connect, "seq1:1")
	f.Heard(at(1120))
	if !f.Following() || f.Target() != "seq1:1" {
		t.Fatalf("following %v target %q", f.Following(), f.Target())
	}
}

func TestSilentSequencerIsDroppedAfterTheLease(t *testing.T) {
	f := New(at(0), cfg(false))
	expect(t, f, at(0), Connect, "seq0:1")
	f.Heard(at(0))
	f.Heard(at(500))
	expect(t, f, at(1499), Wait, "")
	expect(t, f, at(1500), Disconnect, "seq0:1")
	// An agent never takes over, however long it waits.
	for ms := 1600; ms < 10_000; ms += 100 {
		if a := f.Tick(at(ms)); a.Kind == TakeOver {
			t.Fatalf("agent took over at %dms", ms)
		}
		f.Failed(at(ms)) // every scan and connect fails
	}
}

func TestUnansweredConnectTimesOut(t *testing.T) {
	f := New(at(0), cfg(false))
	expect(t, f, at(0), Connect, "seq0:1")
	expect(t, f, at(999), Wait, "")
	expect(t, f, at(1000), Disconnect, "seq0:1")
}

func TestStandbyTakesOverOnlyAfterLeaseScanAndFailedConnect(t *testing.T) {
	f := New(at(0), cfg(true))
	expect(t, f, at(0), Connect, "seq0:1")
	f.Heard(at(0))
	f.Heard(at(400)) // the active sequencer's last heartbeat
	f.Failed(at(450))
	ms := 450
	var took int
	for ; ms < 5000 && took == 0; ms += 10 {
		switch a := f.Tick(at(ms)); a.Kind {
		case Scan:
			f.Scanned(at(ms), "seq0:1") // the log still names the dead one
		case Connect:
			f.Failed(at(ms))
		case TakeOver:
			took = ms
		}
	}
	if took < 1400 || took > 1700 {
		t.Fatalf("took over at %dms; want a lease (1s) after the last heartbeat at 400ms, plus at most a retry", took)
	}
}

func TestStandbyFollowsANewActiveInsteadOfTakingOver(t *testing.T) {
	f := New(at(0), cfg(true))
	expect(t, f, at(0), Connect, "seq0:1")
	f.Failed(at(0))
	expect(t, f, at(100), Scan, "")
	f.Scanned(at(100), "seq2:1") // another standby took over already
	expect(t, f, at(100), Connect, "seq2:1")
	f.Heard(at(110))
	for ms := 200; ms < 3000; ms += 100 {
		f.Heard(at(ms))
		if a := f.Tick(at(ms)); a.Kind != Wait {
			t.Fatalf("at %dms: %+v while hearing from the active sequencer", ms, a)
		}
	}
}

func TestRestartedSoleSequencerTakesOverFromItself(t *testing.T) {
	// The only sequencer restarts as a standby: the newest epoch entry is
	// its own previous incarnation's, which it must not dial.
	c := cfg(true)
	c.Seed = ""
	f := New(at(0), c)
	expect(t, f, at(0), Scan, "")
	f.Scanned(at(5), "seq1:1")
	for ms := 10; ms < 3000; ms += 10 {
		a := f.Tick(at(ms))
		if a.Kind == Connect {
			t.Fatalf("dialled %s, its own address", a.Addr)
		}
		if a.Kind == Scan {
			f.Scanned(at(ms), "seq1:1")
		}
		if a.Kind == TakeOver {
			if ms < 1000 {
				t.Fatalf("took over at %dms, before a lease of silence", ms)
			}
			return
		}
	}
	t.Fatal("never took over")
}

func TestTakeOverFailedFollowsAgain(t *testing.T) {
	c := cfg(true)
	c.Seed = ""
	f := New(at(0), c)
	expect(t, f, at(0), Scan, "")
	f.Scanned(at(0), "")
	ms := 0
	for a := f.Tick(at(ms)); a.Kind != TakeOver; a = f.Tick(at(ms)) {
		if a.Kind == Scan {
			f.Scanned(at(ms), "")
		}
		if ms += 10; ms > 5000 {
			t.Fatal("never took over on an empty log")
		}
	}
	f.TakeOverFailed(at(ms)) // the other standby won the epoch entry
	expect(t, f, at(ms+100), Scan, "")
	f.Scanned(at(ms+100), "seq0:1")
	expect(t, f, at(ms+100), Connect, "seq0:1")
}
