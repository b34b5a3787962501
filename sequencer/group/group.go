package group

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a group's state, named as Kafka names it in DescribeGroups and
// ListGroups.
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	// stateDead is what a group the coordinator does not know is reported
	// as. No group in memory is ever Dead: Kafka's Dead is the moment
	// before a group is dropped, and here the group is dropped at once.
	stateDead
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	case stateDead:
		return "Dead"
	}
	return fmt.Sprintf("state(%d)", int8(s))
}

// group is one consumer group's membership.
type group struct {
	name       string
	state      state
	generation int32
	// protocolType is the members' protocol type ("consumer" for
	// consumers); it is set by the first member and every later member
	// must match it.
	protocolType string
	// protocol is the protocol selected when the last join phase completed.
	protocol string
	leader   string // a member id; "" only while there are no members

	members map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED whose
	// owners have not joined with them yet, each with its session timer.
	// A join phase waits for them, as Kafka's does.
	pending map[string]uint64
	static  map[string]string // group.instance.id -> member id
	// supported counts, per protocol name, the members that support it.
	supported map[string]int
	// awaitingJoin counts the members with a JoinGroup parked.
	awaitingJoin int
	// pendingSync are the members that have not sent SyncGroup since the
	// last join phase completed (Kafka's pendingSyncMembers).
	pendingSync map[string]bool

	joinTimer, syncTimer uint64
	// initial is set while the join phase is in its initial delay, which
	// nothing but its timer ends (Kafka's InitialDelayedJoin).
	initial *initialDelay
	// newMemberAdded records that a new member joined during the initial
	// delay, which extends it once more.
	newMemberAdded bool
}

// initialDelay is the current stage of an initial rebalance delay.
type initialDelay struct {
	delay     time.Duration // this stage's length
	remaining time.Duration // how much more the delay may still be extended by
}

// member is one member of a group.
type member struct {
	id         string
	instanceID *string // group.instance.id of a static member
	clientID   string
	clientHost string
	seq        uint64 // join order: leader succession and listing order

	protocols []protocol // in the member's order of preference
	session   time.Duration
	rebalance time.Duration

	assignment []byte
	// joins and syncs are the member's parked JoinGroup and SyncGroup
	// requests. There is normally at most one of each; a client that
	// retried on a new connection before its first reply can have more,
	// and all of them get the reply.
	joins, syncs []waiter
	// isNew is set until the member's first join phase completes.
	isNew bool
	timer uint64 // the session timer's token; 0 when none is armed
}

type protocol struct {
	name     string
	metadata []byte
}

// waiter is a parked request: the caller's id and the version to answer in.
type waiter struct {
	id      uint64
	version int16
}

func newGroup(name string) *group {
	return &group{
		name:      name,
		members:   map[string]*member{},
		pending:   map[string]uint64{},
		static:    map[string]string{},
		supported: map[string]int{},
	}
}

// immune reports whether m's session cannot expire now: a member with a
// request parked is waiting on the coordinator, not the other way round.
// Its join phase or sync deadline bounds the wait instead. A new member
// parked in its first JoinGroup is the exception; it has
// newMemberJoinTimeout.
func (m *member) immune() bool {
	return (len(m.joins) > 0 && !m.isNew) || len(m.syncs) > 0
}

// matches reports whether protocols are exactly m's, in the same order.
func (m *member) matches(protocols []protocol) bool {
	if len(m.protocols) != len(protocols) {
		return false
	}
	for i, p := range protocols {
		if m.protocols[i].name != p.name || !bytes.Equal(m.protocols[i].metadata, p.metadata) {
			return false
		}
	}
	return true
}

// metadata returns m's metadata for the named protocol.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	panic(fmt.Sprintf("group: member %s does not support the selected protocol %q", m.id, name))
}

// sorted returns the members in join order.
func (g *group) sorted() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// allJoined reports whether every member has a JoinGroup parked and no
// pending member is still to come (Kafka's hasAllMembersJoined).
func (g *group) allJoined() bool {
	return g.awaitingJoin == len(g.members) && len(g.pending) == 0
}

// rebalanceTimeout is the longest rebalance timeout among the members.
func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

// supports reports whether a member with these protocols may join (Kafka's
// supportsProtocols): an Empty group takes any non-empty protocol type and
// list; otherwise the type must match and at least one protocol must be
// supported by every current member.
func (g *group) supports(protocolType string, protocols []protocol) bool {
	if g.state == stateEmpty {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supported[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

// count adds delta to the support count of each distinct protocol.
func (g *group) count(protocols []protocol, delta int) {
	for i, p := range protocols {
		if !listed(protocols[:i], p.name) {
			g.supported[p.name] += delta
			if g.supported[p.name] == 0 {
				delete(g.supported, p.name)
			}
		}
	}
}

func listed(protocols []protocol, name string) bool {
	for _, p := range protocols {
		if p.name == name {
			return true
		}
	}
	return false
}

// selectProtocol picks the group's protocol as Kafka's selectProtocol does:
// among the protocols every member supports, each member votes for the one
// it prefers most, and the most votes win. Kafka breaks a tie by hash order;
// here the leader's preference breaks it.
func (g *group) selectProtocol() string {
	leader := g.members[g.leader]
	if leader == nil {
		panic(fmt.Sprintf("group %s: selecting a protocol without a leader", g.name))
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.protocols {
			if g.supported[p.name] == len(g.members) {
				votes[p.name]++
				break
			}
		}
	}
	best, most := "", 0
	for _, p := range leader.protocols { // the leader supports every candidate
		if v := votes[p.name]; v > most {
			best, most = p.name, v
		}
	}
	if most == 0 {
		panic(fmt.Sprintf("group %s: no protocol is supported by every member", g.name))
	}
	return best
}

// validateMember applies Kafka's validateCurrentMember: a static member's
// instance id must map to the member id it sends (FENCED_INSTANCE_ID if it
// maps to another, UNKNOWN_MEMBER_ID if to none), and the member must exist.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		current, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if current != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

// add makes m a member (Kafka's GroupMetadata.add). The first member sets
// the group's protocol type and becomes leader.
func (g *group) add(m *member, protocolType string) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	g.members[m.id] = m
	g.count(m.protocols, 1)
	delete(g.pending, m.id)
}

// remove drops m from the group without answering anything or triggering a
// rebalance (Kafka's GroupMetadata.remove). The next member in join order
// succeeds a departing leader.
func (g *group) remove(m *member) {
	delete(g.members, m.id)
	g.count(m.protocols, -1)
	if len(m.joins) > 0 {
		g.awaitingJoin--
	}
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	g.synced(m.id)
	m.timer = 0
	if g.leader == m.id {
		g.leader = ""
		if ms := g.sorted(); len(ms) > 0 {
			g.leader = ms[0].id
		}
	}
}

// rename gives a static member the member id of its replacement (Kafka's
// replaceStaticMember): the member keeps its place, its assignment and its
// leadership.
func (g *group) rename(m *member, id string) {
	old := m.id
	delete(g.members, old)
	m.id = id
	g.members[id] = m
	g.static[*m.instanceID] = id
	if g.leader == old {
		g.leader = id
	}
	if g.pendingSync[old] {
		delete(g.pendingSync, old)
		g.pendingSync[id] = true
	}
}

// synced notes that a member has sent SyncGroup (or left); the sync timer is
// disarmed once nobody is left to wait for.
func (g *group) synced(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncTimer = 0
	}
}

// takeJoins unparks m's JoinGroups for the caller to answer.
func (g *group) takeJoins(m *member) []waiter {
	ws := m.joins
	if len(ws) > 0 {
		g.awaitingJoin--
	}
	m.joins = nil
	return ws
}

// parkedMax bounds the requests of each kind one member can have parked. A
// client has one JoinGroup or SyncGroup in flight; more come only from
// retries on new connections, whose predecessors are most likely gone.
const parkedMax = 4

// parkJoin parks a JoinGroup of m. Past parkedMax, the oldest is answered
// at once with REBALANCE_IN_PROGRESS, which makes a live client rejoin.
func (c *Coordinator) parkJoin(g *group, m *member, w waiter) {
	if len(m.joins) == 0 {
		g.awaitingJoin++
	}
	if len(m.joins) == parkedMax {
		c.joinError(m.joins[0], m.id, kerr.RebalanceInProgress.Code)
		m.joins = append(m.joins[:0], m.joins[1:]...)
	}
	m.joins = append(m.joins, w)
}

// parkSync parks a SyncGroup of m, bounded as parkJoin.
func (c *Coordinator) parkSync(m *member, w waiter) {
	if len(m.syncs) == parkedMax {
		c.syncError(m.syncs[0], kerr.RebalanceInProgress.Code)
		m.syncs = append(m.syncs[:0], m.syncs[1:]...)
	}
	m.syncs = append(m.syncs, w)
}

// memberMetadata is the member list the leader gets in its JoinGroup
// response: every member's metadata for the selected protocol.
func (g *group) memberMetadata() []kmsg.JoinGroupResponseMember {
	ms := g.sorted()
	out := make([]kmsg.JoinGroupResponseMember, 0, len(ms))
	for _, m := range ms {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = m.metadata(g.protocol)
		out = append(out, jm)
	}
	return out
}

// maybePrepareRebalance starts a rebalance unless one is under way (Kafka's
// canRebalance: from Empty, Stable or CompletingRebalance).
func (c *Coordinator) maybePrepareRebalance(g *group) {
	switch g.state {
	case stateEmpty, stateStable, stateCompletingRebalance:
		c.prepareRebalance(g)
	}
}

// prepareRebalance starts a join phase. Members waiting in SyncGroup are
// told to rejoin. An Empty group's first join phase waits the initial
// rebalance delay; any other waits for every member to rejoin, or for the
// rebalance timeout.
func (c *Coordinator) prepareRebalance(g *group) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		c.propagate(g, kerr.RebalanceInProgress.Code)
	}
	g.pendingSync = nil
	g.syncTimer = 0
	rt := g.rebalanceTimeout()
	if g.state == stateEmpty {
		d := c.cfg.InitialRebalanceDelay
		g.initial = &initialDelay{delay: d, remaining: max(rt-d, 0)}
		g.joinTimer = c.arm(d, timerJoin, g, "")
	} else {
		g.initial = nil
		g.joinTimer = c.arm(rt, timerJoin, g, "")
	}
	g.state = statePreparingRebalance
}

// joinPhaseEnded runs when the join timer fires. During the initial delay a
// new member's arrival extends the delay by another stage (never past the
// rebalance timeout), exactly as Kafka's InitialDelayedJoin does; otherwise
// the join phase completes with whoever has joined.
func (c *Coordinator) joinPhaseEnded(g *group) {
	if g.state != statePreparingRebalance {
		panic(fmt.Sprintf("group %s: join timer fired in state %s", g.name, g.state))
	}
	if d := g.initial; d != nil && g.newMemberAdded && d.remaining != 0 {
		g.newMemberAdded = false
		next := min(c.cfg.InitialRebalanceDelay, d.remaining)
		g.initial = &initialDelay{delay: next, remaining: max(d.remaining-d.delay, 0)}
		g.joinTimer = c.arm(next, timerJoin, g, "")
		return
	}
	c.completeJoin(g)
}

// completeJoin ends a join phase (Kafka's onCompleteJoin). Dynamic members
// that did not rejoin are removed; static ones stay (their session decides).
// If nobody rejoined but static members remain, the phase waits another
// rebalance timeout. Otherwise the generation advances, a protocol is
// selected, and every waiting member gets its JoinGroup response: the
// leader with the member list, the followers without.
func (c *Coordinator) completeJoin(g *group) {
	g.initial = nil
	g.newMemberAdded = false
	g.joinTimer = 0
	for _, m := range g.sorted() {
		if len(m.joins) == 0 && m.instanceID == nil {
			c.drop(g, m)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		g.joinTimer = c.arm(g.rebalanceTimeout(), timerJoin, g, "")
		return
	}
	g.generation++
	g.pendingSync = map[string]bool{}
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.protocol = ""
		return
	}
	g.protocol = g.selectProtocol()
	g.state = stateCompletingRebalance
	for _, m := range g.sorted() {
		for _, w := range g.takeJoins(m) {
			c.joinOK(g, w, m, g.leader, m.id == g.leader, false)
		}
		c.armSession(g, m)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.syncTimer = c.arm(g.rebalanceTimeout(), timerSync, g, "")
}

// electJoinedLeader keeps the leader if it rejoined, else makes the first
// member that rejoined the leader. False means nobody rejoined.
func (g *group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && len(l.joins) > 0 {
		return true
	}
	for _, m := range g.sorted() {
		if len(m.joins) > 0 {
			g.leader = m.id
			return true
		}
	}
	return false
}

// syncPhaseEnded runs when the sync timer fires: the members that got their
// JoinGroup response but never sent SyncGroup are removed, and the group
// rebalances (Kafka's onExpirePendingSync).
func (c *Coordinator) syncPhaseEnded(g *group) {
	if g.state != stateCompletingRebalance && g.state != stateStable || len(g.pendingSync) == 0 {
		return
	}
	ids := make([]string, 0, len(g.pendingSync))
	for id := range g.pendingSync {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if m := g.members[id]; m != nil {
			c.drop(g, m)
		}
	}
	c.prepareRebalance(g)
}

// sessionExpired removes a member whose session ended, unless it is waiting
// on the coordinator (Kafka's hasSatisfiedHeartbeat); such a member's
// session restarts when its request is answered.
func (c *Coordinator) sessionExpired(g *group, m *member) {
	if m.immune() {
		return
	}
	c.removeMember(g, m)
}

// removeMember removes a member that left or failed and moves the group on
// (Kafka's removeMemberAndUpdateGroup). A parked JoinGroup is answered with
// UNKNOWN_MEMBER_ID so that a live client rejoins. A parked SyncGroup gets
// the same; Kafka leaves it unanswered, which would stall the connection.
func (c *Coordinator) removeMember(g *group, m *member) {
	for _, w := range g.takeJoins(m) {
		c.joinError(w, "", kerr.UnknownMemberID.Code)
	}
	for _, w := range m.syncs {
		c.syncError(w, kerr.UnknownMemberID.Code)
	}
	m.syncs = nil
	g.remove(m)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.maybePrepareRebalance(g)
	}
	// In PreparingRebalance, settle completes the join phase if everyone
	// left has joined.
}

// drop removes a member that has no request parked, with nothing else to do.
func (c *Coordinator) drop(g *group, m *member) {
	if len(m.joins) > 0 || len(m.syncs) > 0 {
		panic(fmt.Sprintf("group %s: dropping member %s with a parked request", g.name, m.id))
	}
	g.remove(m)
}

// propagate answers every parked SyncGroup: with the member's assignment
// when code is 0, with the error otherwise. Each member answered starts a
// new session (Kafka's propagateAssignment).
func (c *Coordinator) propagate(g *group, code int16) {
	for _, m := range g.sorted() {
		if len(m.syncs) == 0 {
			continue
		}
		for _, w := range m.syncs {
			if code != 0 {
				c.syncError(w, code)
			} else {
				c.syncOK(g, w, m)
			}
		}
		m.syncs = nil
		c.armSession(g, m)
	}
}
