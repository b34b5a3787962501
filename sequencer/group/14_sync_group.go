package group

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup (key 14), versions 0-5, as Kafka's handleSyncGroup:
//   - After a join phase (CompletingRebalance) every member's SyncGroup is
//     parked until the leader's arrives with the assignments; then every
//     parked member gets its own and the group is Stable. A member the
//     leader left out gets an empty assignment.
//   - In a Stable group a member gets the assignment it already has.
//   - During a join phase: REBALANCE_IN_PROGRESS. A wrong generation:
//     ILLEGAL_GENERATION. An unknown member: UNKNOWN_MEMBER_ID. A stale
//     static member id: FENCED_INSTANCE_ID. v5+: a protocol type or name
//     that is not the group's: INCONSISTENT_GROUP_PROTOCOL.
//   - Members that got their JoinGroup response but send no SyncGroup
//     within the rebalance timeout are removed (by Tick).
func (c *Coordinator) SyncGroup(now time.Time, id uint64, req *kmsg.SyncGroupRequest) {
	c.advance(now)
	w := waiter{id: id, version: req.Version}
	g := c.groups[req.Group]
	if code := c.sync(g, w, req); code != 0 {
		c.syncError(w, code)
	}
	if g != nil {
		c.settle(g)
	}
	c.advance(now)
}

// sync parks or answers the request, or returns the error to answer it with.
func (c *Coordinator) sync(g *group, w waiter, req *kmsg.SyncGroupRequest) int16 {
	switch {
	case req.Group == "":
		return kerr.InvalidGroupID.Code
	case g == nil:
		return kerr.UnknownMemberID.Code
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	if req.ProtocolType != nil && *req.ProtocolType != g.protocolType ||
		req.Protocol != nil && *req.Protocol != g.protocol {
		return kerr.InconsistentGroupProtocol.Code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return kerr.RebalanceInProgress.Code
	case stateCompletingRebalance:
		c.parkSync(m, w)
		g.synced(m.id)
		if m.id == g.leader {
			c.assign(g, req.GroupAssignment)
		}
		return 0
	case stateStable:
		g.synced(m.id)
		c.syncOK(g, w, m)
		c.armSession(g, m)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// assign takes the leader's assignments, hands them to every parked member,
// and makes the group Stable. Assignments to unknown member ids are ignored;
// when a member id appears twice, the last one wins (as in Kafka).
func (c *Coordinator) assign(g *group, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment)
		}
	}
	c.propagate(g, 0)
	g.state = stateStable
}

func (c *Coordinator) syncOK(g *group, w waiter, m *member) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(w.version)
	protocolType, protocol := g.protocolType, g.protocol
	resp.ProtocolType = &protocolType
	resp.Protocol = &protocol
	resp.MemberAssignment = m.assignment
	c.reply(w.id, resp)
}

func (c *Coordinator) syncError(w waiter, code int16) {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(w.version)
	resp.ErrorCode = code
	c.reply(w.id, resp)
}
