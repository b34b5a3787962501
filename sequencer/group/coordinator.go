// Package group is the consumer-group coordinator: Kafka's classic group
// membership protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, and the
// group side of OffsetCommit, DescribeGroups, ListGroups and DeleteGroups)
// for every group, as a sans-I/O state machine that runs inside the
// sequencer.
//
// It follows Apache Kafka's GroupCoordinator (GroupCoordinator.scala and
// GroupMetadata.scala, 3.x) wherever clients can tell the difference; the
// places where it does not are named where they happen.
//
// The coordinator reads no clock: every input carries the time, and Tick
// does the work whose time has come (session expiry, the end of a join
// phase, members that never sent SyncGroup). It starts no goroutine, does no
// I/O, uses no randomness, and never lets map order decide anything, so the
// same inputs always produce the same replies in the same order.
//
// Committed offsets are not kept here: the sequencer keeps them durable in
// its metadata log. Membership is kept in memory only. After a failover the
// new coordinator knows no members, and clients find out through
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION and rejoin, as they do after a
// Kafka coordinator loses a group.
package group

import (
	"container/heap"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config configures a Coordinator. The zero value works: it means no initial
// rebalance delay, Kafka's session timeout bounds, no group size limit, and
// counter-based member ids.
type Config struct {
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms: the
	// first join phase of an empty group waits this long for more members,
	// and waits again (up to the rebalance timeout) while new members keep
	// arriving. Kafka's default is 3s; the zero value means no delay.
	InitialRebalanceDelay time.Duration

	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (Kafka's group.min.session.timeout.ms and
	// group.max.session.timeout.ms). Zero means Kafka's default: 6s and 30m.
	MinSessionTimeout, MaxSessionTimeout time.Duration

	// GroupMaxSize is Kafka's group.max.size. Zero means no limit, which is
	// Kafka's default.
	GroupMaxSize int

	// NewMemberID names a new member. Like Kafka, it is given the member's
	// group.instance.id when the member is static and its client id
	// otherwise. It must never repeat an id. The default, prefix + "-" + a
	// counter, is unique within one Coordinator only: a driver whose
	// coordinator can be replaced (sequencer failover) must inject ids that
	// are unique across incarnations too, or a zombie client of the old
	// coordinator could be taken for a new member that got the same id.
	NewMemberID func(clientID string) string
}

// Kafka's defaults and fixed timeouts.
const (
	defaultMinSessionTimeout = 6 * time.Second
	defaultMaxSessionTimeout = 30 * time.Minute

	// newMemberJoinTimeout is Kafka's NewMemberJoinTimeoutMs: a member that
	// has never completed a join phase is removed if its first JoinGroup
	// stays parked this long, since it cannot heartbeat meanwhile.
	newMemberJoinTimeout = 5 * time.Minute

	// rebalanceTimeoutMin is the least rebalance timeout a member gets. A
	// zero timeout would let a join phase that must wait for static members
	// re-arm itself at the same instant forever.
	rebalanceTimeoutMin = time.Millisecond

	// timersCompactMin is the smallest timer heap that is ever compacted.
	timersCompactMin = 1024
)

// Client is who sent a JoinGroup: the request header's client id and the
// connection's remote host. Kafka shows both in DescribeGroups and builds
// member ids from the client id.
type Client struct {
	ID   string
	Host string
}

// Reply answers the request the caller named ID. Resp has its version set to
// the request's. Byte slices in a response (member metadata, assignments)
// are shared with the coordinator's state: callers encode them and must not
// modify them.
type Reply struct {
	ID   uint64
	Resp kmsg.Response
}

// Coordinator runs every consumer group. Inputs are the request methods,
// CheckCommit, DeleteGroup and Tick; replies to requests come out of Replies,
// possibly much later (JoinGroup and SyncGroup wait for the other members).
// Every request gets exactly one reply, even when it is superseded, so a
// driver that answers a connection's requests in order never stalls.
//
// Every input first does the work Tick(now) would do, so a driver that ticks
// late still sees Kafka's order of events: a member whose session ended
// before its heartbeat arrived is already gone. Timers fire at the time they
// were due, so how punctually the driver ticks changes when replies come
// out, never what they say. Time never goes back: an earlier time than one
// seen before is taken as the later one.
//
// Coordinator is not safe for concurrent use.
type Coordinator struct {
	cfg    Config
	now    time.Time
	groups map[string]*group

	timers timerHeap
	// timersCompacted is the heap's size after its last compaction; the heap
	// is compacted again when it has doubled.
	timersCompacted int

	seq      uint64 // the last timer token or member join order handed out
	memberID uint64 // the default NewMemberID's counter
	replies  []Reply
}

// New returns a coordinator with no groups.
func New(cfg Config) *Coordinator {
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = defaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout == 0 {
		cfg.MaxSessionTimeout = defaultMaxSessionTimeout
	}
	if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	c := &Coordinator{cfg: cfg, groups: map[string]*group{}}
	if c.cfg.NewMemberID == nil {
		c.cfg.NewMemberID = c.counterMemberID
	}
	return c
}

func (c *Coordinator) counterMemberID(prefix string) string {
	c.memberID++
	return prefix + "-" + strconv.FormatUint(c.memberID, 10)
}

// Replies returns the replies produced since the last call, in the order
// they were produced, and forgets them.
func (c *Coordinator) Replies() []Reply {
	r := c.replies
	c.replies = nil
	return r
}

// Tick does the work whose time has come: it expires sessions and pending
// members, ends join phases whose rebalance timeout or initial delay has
// passed, and removes members that did not send SyncGroup in time. Replies
// to the requests this unparks come out of Replies.
func (c *Coordinator) Tick(now time.Time) { c.advance(now) }

// NextDeadline returns the earliest time at which Tick has work, so that a
// driver can sleep until then; false when no timer is armed.
func (c *Coordinator) NextDeadline() (time.Time, bool) {
	for len(c.timers) > 0 && !c.live(c.timers[0]) {
		heap.Pop(&c.timers)
	}
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].at, true
}

// advance fires every timer due by now, earliest first and each at its own
// time, then moves time to now. What a timer arms is measured from when it
// was due, not from when the driver got round to ticking, so a late Tick
// changes only when replies come out, never what they say.
func (c *Coordinator) advance(now time.Time) {
	for len(c.timers) > 0 && !c.timers[0].at.After(now) {
		t := heap.Pop(&c.timers).(timer)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.fire(t)
	}
	if now.After(c.now) {
		c.now = now
	}
}

// reply queues a response for the request id.
func (c *Coordinator) reply(id uint64, resp kmsg.Response) {
	c.replies = append(c.replies, Reply{ID: id, Resp: resp})
}

// next hands out the next token: timer tokens and member join order share
// one counter, so each is unique.
func (c *Coordinator) next() uint64 {
	c.seq++
	return c.seq
}

// settle finishes what an input started for g: a join phase whose members
// have all joined completes at once (Kafka's checkAndComplete on the join
// purgatory), and a group left with no members and no pending members is
// forgotten.
//
// Kafka keeps an Empty group until offsets.retention cleanup; it is forgotten
// here at once, which bounds memory. Nothing a client sees changes, because
// the caller reports groups that have committed offsets as Empty in
// DescribeGroups and ListGroups; only the generation restarts at 0 when the
// group next forms, as it would after a failover.
func (c *Coordinator) settle(g *group) {
	if g.state == statePreparingRebalance && g.initial == nil && g.allJoined() {
		c.completeJoin(g)
	}
	if g.state == stateEmpty && len(g.pending) == 0 && c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
}

func millis(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }
