// Package bugs plants known bugs for the simulator's own tests: a checker that
// catches nothing proves nothing, so the sim tests switch each bug on and
// assert that some seed finds it. Production code never sets a bug; every
// check is a load of one atomic word.
package bugs

import "sync/atomic"

// Bug names a planted bug.
type Bug int32

const (
	None Bug = iota
	// AckBeforeDurable releases the sequencer's replies when the entry is
	// proposed, before it is durable.
	AckBeforeDurable
	// AmbiguousAsFailed treats a failed append as not having happened and
	// appends the entry again at the next index, without reading it back.
	AmbiguousAsFailed
	// SkipIdempotence accepts every idempotent batch, retries included.
	SkipIdempotence
	// WrongBaseOffset patches batches with the base offset plus one.
	WrongBaseOffset
	// IgnoreLogAfterSnapshot recovers from the newest snapshot only.
	IgnoreLogAfterSnapshot
	// FencedKeepsAcking lets a fenced sequencer treat another's entry as its own.
	FencedKeepsAcking
	// CommitAckBeforeDurable acknowledges an offset commit as soon as it
	// is decided, before its log entry is durable.
	CommitAckBeforeDurable
	count
)

var names = [...]string{"none", "ack-before-durable", "ambiguous-as-failed", "skip-idempotence",
	"wrong-base-offset", "ignore-log-after-snapshot", "fenced-keeps-acking", "commit-ack-before-durable"}

func (b Bug) String() string {
	if b < 0 || b >= count {
		return "unknown"
	}
	return names[b]
}

// All lists the planted bugs.
func All() []Bug {
	out := make([]Bug, 0, count-1)
	for b := None + 1; b < count; b++ {
		out = append(out, b)
	}
	return out
}

var active atomic.Int32

// Set plants b (None clears). Only the simulator's tests call it.
func Set(b Bug) { active.Store(int32(b)) }

// On reports whether b is planted.
func On(b Bug) bool { return Bug(active.Load()) == b }
