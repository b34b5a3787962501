package sim

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

// Checker judges a run's history against DESIGN.md's invariants and the
// anomalies Jepsen reports for Kafka:
//
//   - lost write: an acknowledged record is not readable at its offset;
//
//   - duplicate: one record readable at two offsets (invariant 3);
//
//   - inconsistent offsets: two records at one offset, a gap in a
//     partition's offsets, or an ack at a different offset than it is read
//     at (invariants 1 and 2);
//
//   - non-monotonic poll and poll skip, as the consumers see them;
//
//   - a high watermark that goes back (invariant 4);
//
//   - a sequencer reply that rests on a log entry it did not write
//     (invariant 6: a fenced sequencer acknowledges nothing).
//
//   - an acknowledged offset commit that a later read does not see, or
//     committed offsets that go back (invariant 5).
type Checker struct {
	w *World
	// commits[p] is the highest offset of partition p whose commit by the
	// group was acknowledged: committed offsets never go back below it.
	commits    map[int32]int64
	violations []string
	tried      map[string]bool
	acks       map[string]loc
	readAt     map[loc]string
	readOf     map[string]loc
}

type loc struct {
	partition int32
	offset    int64
}

func newChecker(w *World) *Checker {
	return &Checker{w: w, commits: map[int32]int64{}, tried: map[string]bool{}, acks: map[string]loc{}, readAt: map[loc]string{}, readOf: map[string]loc{}}
}

func (c *Checker) violation(format string, args ...any) {
	msg := fmt.Sprintf("%.3fms: ", float64(c.w.now.Microseconds())/1000) + fmt.Sprintf(format, args...)
	c.w.logf("VIOLATION %s", msg)
	if len(c.violations) < 20 {
		c.violations = append(c.violations, msg)
	}
}

func (c *Checker) attempted(id string) { c.tried[id] = true }

func (c *Checker) acked(id string, p int32, off int64) {
	l := loc{p, off}
	if prev, ok := c.acks[id]; ok && prev != l {
		c.violation("inconsistent offsets: record %s acknowledged at %v and at %v", id, prev, l)
	}
	c.acks[id] = l
	if got, ok := c.readAt[l]; ok && got != id {
		c.violation("lost write: record %s acknowledged at %d/%d, where %s was read", id, p, off, got)
	}
}

func (c *Checker) read(id string, p int32, off int64) {
	l := loc{p, off}
	if !c.tried[id] {
		c.violation("read a record that was never produced: %q at %d/%d", id, p, off)
	}
	if got, ok := c.readAt[l]; ok && got != id {
		c.violation("inconsistent offsets: %d/%d read as %s and as %s", p, off, got, id)
	}
	if prev, ok := c.readOf[id]; ok && prev != l {
		c.violation("duplicate: record %s read at %d/%d and at %d/%d", id, prev.partition, prev.offset, p, off)
	}
	if a, ok := c.acks[id]; ok && a != l {
		c.violation("lost write: record %s acknowledged at %d/%d, read at %d/%d", id, a.partition, a.offset, p, off)
	}
	c.readAt[l], c.readOf[id] = id, l
}

// commitAcked records an acknowledged offset commit of the group.
//
// Acknowledgements may arrive out of order (a commit decided before another
// can be answered after it), so the floor is the highest acknowledged
// offset: the committed state itself never goes back, since every member
// starts from the committed offset and a stale generation's commits are
// refused.
func (c *Checker) commitAcked(member string, p int32, off int64) {
	if prev, ok := c.commits[p]; !ok || off > prev {
		c.commits[p] = off
	}
	c.w.logf("%s's commit of %d on partition %d is acknowledged", member, off, p)
}

// commitFloor is, per partition, what every committed-offset read sent
// now must return at least.
func (c *Checker) commitFloor(ps []int32) map[int32]int64 {
	floor := make(map[int32]int64, len(ps))
	for _, p := range ps {
		if off, ok := c.commits[p]; ok {
			floor[p] = off
		} else {
			floor[p] = -1 // nothing acknowledged: never committed is fine
		}
	}
	return floor
}

// committedRead checks a committed offset read against the acknowledged
// commits made before the read was sent (invariant 5).
func (c *Checker) committedRead(member string, p int32, got, floor int64) {
	if got < floor {
		c.violation("lost commit: %s read committed offset %d for partition %d, but %d was acknowledged before it asked", member, got, p, floor)
	}
}

// sequencerReply checks invariant 6 when a sequencer sends a reply: the
// entry it rests on must be in the store, written by this sequencer
// incarnation. A fenced or over-eager sequencer fails this.
func (c *Checker) sequencerReply(p *SeqProc, r sequencer.Reply) {
	if !successful(r.Body) {
		return
	}
	writer, ok := c.w.store.logWriter(r.Entry)
	if !ok {
		c.violation("%s acknowledged before entry %d was durable", p.name, r.Entry)
		return
	}
	if writer != p.writer {
		c.violation("%s acknowledged on entry %d, which %s wrote", p.name, r.Entry, writer)
	}
}

func successful(body any) bool {
	switch b := body.(type) {
	case *sequencer.CommitReply:
		for _, r := range b.Results {
			if r.Err == 0 {
				return true
			}
		}
	case *sequencer.InitProducerReply:
		return b.Err == 0
	case *sequencer.TopicReply:
		return b.Err == 0
	case *kmsg.OffsetCommitResponse:
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					return true
				}
			}
		}
	}
	return false
}

// final checks what must hold once the liveness phase has read everything:
// every acknowledged record was read at its offset, and each partition's
// offsets are dense up to its high watermark.
func (c *Checker) final(hwm []int64) {
	ids := make([]string, 0, len(c.acks))
	for id := range c.acks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	lost := 0
	for _, id := range ids {
		a := c.acks[id]
		if got, ok := c.readAt[a]; !ok || got != id {
			lost++
			if lost <= 5 {
				c.violation("lost write: record %s acknowledged at %d/%d was never read there (read there: %q)", id, a.partition, a.offset, got)
			}
		}
	}
	for p, n := range hwm {
		for off := int64(0); off < n; off++ {
			if _, ok := c.readAt[loc{int32(p), off}]; !ok {
				c.violation("inconsistent offsets: partition %d has no record at offset %d below its high watermark %d", p, off, n)
				break
			}
		}
	}
}
