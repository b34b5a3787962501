// Package discovery decides how agents and standby sequencers find the active
// sequencer, when they give up on it, and when a standby takes over. It is
// sans-I/O: the driver (the simulator, or the real process) does the
// connecting and the reading of the log, and reports back.
//
// The active sequencer is the owner of the newest epoch entry in the metadata
// log (see EpochScan). A follower connects to it and hears from it at least every
// heartbeat; a follower that hears nothing for a lease drops the connection,
// reads the log again, and connects to whatever owns the newest epoch entry
// then. A standby that has heard from no active sequencer for a lease, and
// could not reach the owner of the newest epoch entry after reading it,
// takes over: it appends its own epoch entry, which fences the old owner (the
// append is a conditional create, so of two standbys taking over at once only
// one wins).
package discovery

import "time"

// Config configures a Follower.
type Config struct {
	// Seed is where to try first: the configured sequencer address. Empty
	// means read the log first.
	Seed string
	// Self is the follower's own address, when it is a sequencer: the
	// newest epoch entry may be its own previous incarnation's.
	Self string
	// Lease is how long a follower waits without hearing from the active
	// sequencer before it gives up on it (and a standby takes over).
	Lease time.Duration
	// RetryMin and RetryMax bound the backoff between attempts.
	RetryMin, RetryMax time.Duration
	// Standby lets the follower take over.
	Standby bool
}

// Defaults, for a real deployment. The sequencer sends a heartbeat every
// 100 ms, so a lease of 1 s is ten missed heartbeats. Retries are capped low
// because a follower that backs off for long finds a new sequencer late, and
// failover time is the lease plus that; a retry is one LIST and a GET or two.
const (
	DefaultLease    = time.Second
	DefaultRetryMin = 25 * time.Millisecond
	DefaultRetryMax = 200 * time.Millisecond
)

// ActionKind is what the driver must do next.
type ActionKind int

const (
	Wait       ActionKind = iota // nothing now; call Tick again later
	Connect                      // connect to Action.Addr and subscribe; report Heard or Failed
	Disconnect                   // drop the connection to Action.Addr (silent past the lease); no report needed
	Scan                         // read the newest epoch entry (see EpochScan); report Scanned or Failed
	TakeOver                     // a standby only: recover and append an epoch entry
)

// Action is the Follower's decision.
type Action struct {
	Kind ActionKind
	Addr string
}

type phase int

const (
	idle       phase = iota // nothing under way; the next attempt is due at retryAt
	connecting              // Connect handed out; waiting for Heard or Failed
	following               // hearing from the active sequencer
	scanning                // Scan handed out; waiting for Scanned or Failed
	takingOver              // TakeOver handed out; the driver owns what happens next
)

// Follower is the state machine. It is not safe for concurrent use.
type Follower struct {
	cfg       Config
	phase     phase
	target    string    // the address to connect to next, "" when unknown
	tried     bool      // target was tried (and failed) since it was learned
	heard     time.Time // last time the active sequencer was heard from
	silent    time.Time // since when no active sequencer has been heard, zero while following
	scannedAt time.Time // when the last scan after silence began completed
	connectAt time.Time // when the current Connect was handed out
	retryAt   time.Time
	backoff   time.Duration
}

// New returns a Follower that starts at now.
func New(now time.Time, cfg Config) *Follower {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	return &Follower{cfg: cfg, target: cfg.Seed, silent: now, retryAt: now, backoff: cfg.RetryMin}
}

// Following reports whether the follower is hearing from an active sequencer.
func (f *Follower) Following() bool { return f.phase == following }

// Target is the address being followed or tried next.
func (f *Follower) Target() string { return f.target }

// Tick decides what to do at now.
func (f *Follower) Tick(now time.Time) Action {
	switch f.phase {
	case following:
		if now.Sub(f.heard) < f.cfg.Lease {
			return Action{Kind: Wait}
		}
		// Alive but silent: a partition, a pause, or a crash without a
		// connection reset. Give up on it as if it had failed.
		addr := f.target
		f.fail(now)
		return Action{Kind: Disconnect, Addr: addr}
	case connecting:
		if now.Sub(f.connectAt) < f.cfg.Lease {
			return Action{Kind: Wait}
		}
		// No answer at all: the request or its answer was lost.
		addr := f.target
		f.fail(now)
		return Action{Kind: Disconnect, Addr: addr}
	case scanning, takingOver:
		return Action{Kind: Wait}
	}
	if now.Before(f.retryAt) {
		return Action{Kind: Wait}
	}
	if f.cfg.Standby && now.Sub(f.silent) >= f.cfg.Lease && !f.scannedAt.IsZero() && f.tried {
		// Silent for a lease, the log read since, and its newest epoch
		// owner unreachable: nobody is serving. Take over.
		f.phase = takingOver
		return Action{Kind: TakeOver}
	}
	if f.target != "" && !f.tried && f.target != f.cfg.Self {
		f.phase = connecting
		f.connectAt = now
		return Action{Kind: Connect, Addr: f.target}
	}
	f.phase = scanning
	return Action{Kind: Scan}
}

// Heard reports a message from the sequencer at Target (a subscription
// answered, an update or a heartbeat). Only an active sequencer's messages
// count: one that is not active must be reported with Failed.
func (f *Follower) Heard(now time.Time) {
	if f.phase != connecting && f.phase != following {
		return
	}
	f.phase = following
	f.heard = now
	f.silent = time.Time{}
	f.scannedAt = time.Time{}
	f.tried = false
	f.backoff = f.cfg.RetryMin
}

// Failed reports that a Connect or Scan failed, or that the connection to
// the followed sequencer broke or it said it is not active.
func (f *Follower) Failed(now time.Time) {
	switch f.phase {
	case connecting, following:
		f.fail(now)
	case scanning:
		f.phase = idle
		f.delay(now)
	}
}

func (f *Follower) fail(now time.Time) {
	if f.phase == following {
		f.silent = f.heard // silence began with the last message
	}
	f.phase = idle
	f.tried = true
	f.delay(now)
}

// Scanned reports the owner address of the newest epoch entry.
func (f *Follower) Scanned(now time.Time, addr string) {
	if f.phase != scanning {
		return
	}
	f.phase = idle
	f.scannedAt = now
	if f.target == addr && f.tried {
		// Still the one that just failed: the log has not moved on. Try it
		// again after a pause rather than at once.
		f.tried = false
		f.delay(now)
		if addr == f.cfg.Self || addr == "" {
			f.tried = true
		}
		return
	}
	f.target = addr
	f.tried = addr == f.cfg.Self || addr == ""
	f.backoff = f.cfg.RetryMin
	f.retryAt = now
}

// TakeOverFailed reports that a takeover did not happen (another sequencer
// won the epoch entry, or recovery failed): the standby follows again.
func (f *Follower) TakeOverFailed(now time.Time) {
	if f.phase != takingOver {
		return
	}
	f.phase = idle
	f.tried = true
	f.scannedAt = time.Time{}
	f.silent = now
	f.delay(now)
}

func (f *Follower) delay(now time.Time) {
	f.retryAt = now.Add(f.backoff)
	f.backoff = min(2*f.backoff, f.cfg.RetryMax)
}
