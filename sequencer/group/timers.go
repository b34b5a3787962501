package group

import (
	"container/heap"
	"time"
)

// Timers live in one min-heap ordered by (time, token). A timer is armed by
// pushing an entry and storing its token in the field that owns it
// (member.timer, group.pending[id], group.joinTimer, group.syncTimer).
// Re-arming stores a new token, and disarming stores 0, so an entry whose
// token no longer matches its owner is stale and is skipped when it comes
// up. This keeps arming O(log n) with no deletion from the heap; stale
// entries are dropped when they reach the top, or by a compaction once the
// heap has doubled, so its size stays within a constant factor of the armed
// timers.

type timerKind uint8

const (
	timerSession timerKind = iota // a member's or pending member's session ends
	timerJoin                     // the join phase (or a stage of its initial delay) ends
	timerSync                     // members that have not sent SyncGroup are removed
)

type timer struct {
	at     time.Time
	token  uint64 // unique; also breaks ties in arming order
	kind   timerKind
	group  string
	member string // timerSession only
}

type timerHeap []timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].token < h[j].token
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

// arm pushes a timer that fires after d and returns its token.
func (c *Coordinator) arm(d time.Duration, kind timerKind, g *group, member string) uint64 {
	t := timer{at: c.now.Add(d), token: c.next(), kind: kind, group: g.name, member: member}
	heap.Push(&c.timers, t)
	if n := len(c.timers); n >= timersCompactMin && n >= 2*c.timersCompacted {
		c.compactTimers()
	}
	return t.token
}

// armSession (re)starts m's session timer: Kafka's
// completeAndScheduleNextHeartbeatExpiration.
func (c *Coordinator) armSession(g *group, m *member) {
	m.timer = c.arm(m.session, timerSession, g, m.id)
}

// compactTimers drops every stale entry.
func (c *Coordinator) compactTimers() {
	live := c.timers[:0]
	for _, t := range c.timers {
		if c.live(t) {
			live = append(live, t)
		}
	}
	clear(c.timers[len(live):])
	c.timers = live
	heap.Init(&c.timers)
	c.timersCompacted = len(live)
}

// live reports whether t is still armed: its owner holds its token.
func (c *Coordinator) live(t timer) bool {
	g := c.groups[t.group]
	if g == nil {
		return false
	}
	switch t.kind {
	case timerSession:
		if m := g.members[t.member]; m != nil {
			return m.timer == t.token
		}
		return g.pending[t.member] == t.token
	case timerJoin:
		return g.joinTimer == t.token
	case timerSync:
		return g.syncTimer == t.token
	}
	panic("group: unknown timer kind")
}

// fire runs a timer that has come due, unless it is stale.
func (c *Coordinator) fire(t timer) {
	if !c.live(t) {
		return
	}
	g := c.groups[t.group]
	switch t.kind {
	case timerSession:
		if m := g.members[t.member]; m != nil {
			m.timer = 0
			c.sessionExpired(g, m)
		} else {
			// A pending member never came back with its member id.
			delete(g.pending, t.member)
		}
	case timerJoin:
		g.joinTimer = 0
		c.joinPhaseEnded(g)
	case timerSync:
		g.syncTimer = 0
		c.syncPhaseEnded(g)
	}
	c.settle(g)
}
