package group

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup (key 11), versions 0-9, as Kafka's handleJoinGroup:
//   - v4+: a dynamic member joining without a member id gets
//     MEMBER_ID_REQUIRED and a new id, and is pending until it joins again
//     with it (or its session timeout passes). Older versions join at once.
//   - v5+: a static member (group.instance.id) never needs that round trip.
//     Rejoining with an empty member id replaces its old member id, which
//     is fenced from then on (FENCED_INSTANCE_ID). In a Stable group whose
//     protocol would not change, this needs no rebalance.
//   - The reply is parked until the join phase completes: when every known
//     member has rejoined, or the rebalance timeout (the largest of the
//     members') passes, or, for a new group, the initial rebalance delay.
//   - The leader gets every member's metadata; followers an empty list.
//   - v9+ (KIP-814): a static leader replaced in a Stable group is told to
//     skip the assignment.
func (c *Coordinator) JoinGroup(now time.Time, id uint64, req *kmsg.JoinGroupRequest) {
	c.JoinGroupFrom(now, id, Client{}, req)
}

// JoinGroupFrom is JoinGroup with the client's id and host, which Kafka takes
// from the request header and the connection: new member ids start with the
// client id, and DescribeGroups shows both.
func (c *Coordinator) JoinGroupFrom(now time.Time, id uint64, from Client, req *kmsg.JoinGroupRequest) {
	c.advance(now)
	if g := c.join(waiter{id: id, version: req.Version}, from, req); g != nil {
		c.settle(g)
	}
	c.advance(now) // a zero initial delay ends now
}

// joinArgs is a JoinGroup with its strings and bytes copied, since the
// request may alias a buffer the caller reuses.
type joinArgs struct {
	w            waiter
	client       Client
	memberID     string
	instanceID   *string
	protocolType string
	protocols    []protocol
	session      time.Duration
	rebalance    time.Duration
}

func (c *Coordinator) join(w waiter, from Client, req *kmsg.JoinGroupRequest) *group {
	if req.Group == "" {
		c.joinError(w, req.MemberID, kerr.InvalidGroupID.Code)
		return nil
	}
	a := newJoinArgs(w, from, req)
	if a.session < c.cfg.MinSessionTimeout || a.session > c.cfg.MaxSessionTimeout {
		c.joinError(w, req.MemberID, kerr.InvalidSessionTimeout.Code)
		return nil
	}
	g := c.groups[req.Group]
	if g == nil {
		if a.memberID != "" {
			c.joinError(w, a.memberID, kerr.UnknownMemberID.Code)
			return nil
		}
		g = newGroup(strings.Clone(req.Group))
		c.groups[g.name] = g
	}
	if !c.acceptJoining(g, a.memberID) {
		c.joinError(w, "", kerr.GroupMaxSizeReached.Code)
		return g
	}
	if a.memberID == "" {
		c.joinNew(g, a)
	} else {
		c.joinCurrent(g, a)
	}
	return g
}

func newJoinArgs(w waiter, from Client, req *kmsg.JoinGroupRequest) joinArgs {
	a := joinArgs{
		w:            w,
		client:       Client{ID: strings.Clone(from.ID), Host: strings.Clone(from.Host)},
		memberID:     strings.Clone(req.MemberID),
		protocolType: strings.Clone(req.ProtocolType),
		session:      millis(req.SessionTimeoutMillis),
		rebalance:    millis(req.RebalanceTimeoutMillis),
	}
	if req.Version == 0 {
		a.rebalance = a.session // v0 has no rebalance timeout; Kafka uses the session timeout
	}
	a.rebalance = max(a.rebalance, rebalanceTimeoutMin)
	if req.InstanceID != nil {
		s := strings.Clone(*req.InstanceID)
		a.instanceID = &s
	}
	a.protocols = make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		a.protocols[i] = protocol{name: strings.Clone(p.Name), metadata: bytes.Clone(p.Metadata)}
	}
	return a
}

// acceptJoining applies group.max.size as Kafka's acceptJoiningMember does.
// While a join phase runs, the members already rejoined count, so that the
// last to rejoin are the ones turned away; a turned-away member that was in
// the group is removed.
func (c *Coordinator) acceptJoining(g *group, memberID string) bool {
	if c.cfg.GroupMaxSize <= 0 {
		return true
	}
	m := g.members[memberID]
	var ok bool
	switch g.state {
	case stateEmpty:
		ok = true
	case statePreparingRebalance:
		ok = m != nil && len(m.joins) > 0 || g.awaitingJoin < c.cfg.GroupMaxSize
	default:
		ok = m != nil || len(g.members) < c.cfg.GroupMaxSize
	}
	if !ok {
		if m != nil {
			c.drop(g, m)
		}
		delete(g.pending, memberID)
	}
	return ok
}

// joinNew handles a JoinGroup without a member id.
func (c *Coordinator) joinNew(g *group, a joinArgs) {
	if !g.supports(a.protocolType, a.protocols) {
		c.joinError(a.w, "", kerr.InconsistentGroupProtocol.Code)
		return
	}
	prefix := a.client.ID
	if a.instanceID != nil {
		prefix = *a.instanceID
	}
	id := c.cfg.NewMemberID(prefix)
	if _, taken := g.pending[id]; taken || g.members[id] != nil {
		panic(fmt.Sprintf("group %s: NewMemberID returned %q, which is in use", g.name, id))
	}
	switch {
	case a.instanceID != nil:
		if old, ok := g.static[*a.instanceID]; ok {
			c.replaceStatic(g, g.members[old], id, a)
		} else {
			c.addMember(g, id, a)
		}
	case a.w.version >= 4:
		g.pending[id] = c.arm(a.session, timerSession, g, id)
		c.joinError(a.w, id, kerr.MemberIDRequired.Code)
	default:
		c.addMember(g, id, a)
	}
}

// joinCurrent handles a JoinGroup with a member id: a pending member's
// second join, or a member's rejoin.
func (c *Coordinator) joinCurrent(g *group, a joinArgs) {
	if !g.supports(a.protocolType, a.protocols) {
		c.joinError(a.w, a.memberID, kerr.InconsistentGroupProtocol.Code)
		return
	}
	if _, ok := g.pending[a.memberID]; ok {
		if a.instanceID != nil {
			// Pending members are dynamic; Kafka treats this as a server bug.
			c.joinError(a.w, a.memberID, kerr.UnknownMemberID.Code)
			return
		}
		c.addMember(g, a.memberID, a)
		return
	}
	if code := g.validateMember(a.memberID, a.instanceID); code != 0 {
		c.joinError(a.w, a.memberID, code)
		return
	}
	m := g.members[a.memberID]
	switch g.state {
	case statePreparingRebalance:
		c.updateMember(g, m, a)
	case stateCompletingRebalance:
		if m.matches(a.protocols) {
			// It lost the JoinGroup response: give it again.
			c.joinOK(g, a.w, m, g.leader, m.id == g.leader, false)
			return
		}
		c.updateMember(g, m, a)
		c.prepareRebalance(g)
	case stateStable:
		if m.id != g.leader && m.matches(a.protocols) {
			// Nothing changed: let it sync for the current generation.
			c.joinOK(g, a.w, m, g.leader, false, false)
			return
		}
		// A leader's rejoin always rebalances: that is how it reacts to
		// changes the member metadata does not show (new partitions).
		c.updateMember(g, m, a)
		c.prepareRebalance(g)
	default:
		panic(fmt.Sprintf("group %s: member %s in state %s", g.name, m.id, g.state))
	}
}

// addMember makes a new member and rebalances (Kafka's
// addMemberAndRebalance).
func (c *Coordinator) addMember(g *group, id string, a joinArgs) {
	m := &member{
		id:         id,
		instanceID: a.instanceID,
		clientID:   a.client.ID,
		clientHost: a.client.Host,
		seq:        c.next(),
		protocols:  a.protocols,
		session:    a.session,
		rebalance:  a.rebalance,
		isNew:      true,
	}
	if g.state == statePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, a.protocolType)
	c.parkJoin(g, m, a.w)
	m.timer = c.arm(newMemberJoinTimeout, timerSession, g, id)
	c.maybePrepareRebalance(g)
}

// updateMember takes a member's new protocols and timeouts and parks its
// JoinGroup.
func (c *Coordinator) updateMember(g *group, m *member, a joinArgs) {
	g.count(m.protocols, -1)
	m.protocols = a.protocols
	g.count(m.protocols, 1)
	m.session, m.rebalance = a.session, a.rebalance
	c.parkJoin(g, m, a.w)
}

// replaceStatic handles a static member that joins again without its member
// id, usually after a restart (Kafka's
// updateStaticMemberThenRebalanceOrCompleteJoin). The old member id is
// fenced: requests parked under it get FENCED_INSTANCE_ID. The member keeps
// its place and assignment under the new id. A Stable group whose selected
// protocol would not change answers at once and does not rebalance; the
// response names the old leader id, so that a leader that restarted does not
// assign again (an assignment a Stable group would never hand out), unless
// the client is v9+, which is told to skip the assignment instead.
func (c *Coordinator) replaceStatic(g *group, m *member, id string, a joinArgs) {
	oldLeader, oldID := g.leader, m.id
	for _, w := range g.takeJoins(m) {
		c.joinError(w, oldID, kerr.FencedInstanceID.Code)
	}
	for _, w := range m.syncs {
		c.syncError(w, kerr.FencedInstanceID.Code)
	}
	m.syncs = nil
	g.rename(m, id)
	m.clientID, m.clientHost = a.client.ID, a.client.Host
	c.updateMember(g, m, a)
	c.armSession(g, m)
	switch g.state {
	case stateStable:
		if g.selectProtocol() != g.protocol {
			c.prepareRebalance(g)
			return
		}
		skip := m.id == g.leader && a.w.version >= 9
		leader := oldLeader
		if skip {
			leader = g.leader
		}
		for _, w := range g.takeJoins(m) {
			c.joinOK(g, w, m, leader, skip, skip)
		}
	case stateCompletingRebalance:
		// The leader may be assigning to the old member id: start over.
		c.prepareRebalance(g)
	case statePreparingRebalance:
		// Parked like any member that rejoined.
	default:
		panic(fmt.Sprintf("group %s: static member %s in state %s", g.name, oldID, g.state))
	}
}

// joinOK answers a JoinGroup with the current generation.
func (c *Coordinator) joinOK(g *group, w waiter, m *member, leader string, withMembers, skip bool) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(w.version)
	resp.Generation = g.generation
	protocolType, protocol := g.protocolType, g.protocol
	resp.ProtocolType = &protocolType
	resp.Protocol = &protocol
	resp.LeaderID = leader
	resp.MemberID = m.id
	resp.SkipAssignment = skip
	if withMembers {
		resp.Members = g.memberMetadata()
	}
	c.reply(w.id, resp)
}

// joinError answers a JoinGroup with an error (Kafka's
// JoinGroupResult(memberId, error): generation -1, no protocol, no leader).
func (c *Coordinator) joinError(w waiter, memberID string, code int16) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(w.version)
	resp.ErrorCode = code
	resp.MemberID = memberID
	c.reply(w.id, resp)
}
