package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup (key 13), versions 0-5, as Kafka's handleLeaveGroup. v0-v2
// name one member id, and the error is the top-level one. v3+ name a batch
// of members, each by member id, or by group.instance.id alone (an admin
// removing a static member), each with its own error; the top-level error
// is then only for the whole request. A member that leaves is removed at
// once, which starts a rebalance; a pending member is just forgotten. A
// group left with no members becomes Empty.
func (c *Coordinator) LeaveGroup(now time.Time, id uint64, req *kmsg.LeaveGroupRequest) {
	c.advance(now)
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(req.Version)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		c.reply(id, resp)
		c.advance(now)
		return
	}
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := c.groups[req.Group]
	for _, l := range leaving {
		lm := kmsg.NewLeaveGroupResponseMember()
		lm.MemberID = l.MemberID
		lm.InstanceID = l.InstanceID
		lm.ErrorCode = c.leave(g, l.MemberID, l.InstanceID)
		resp.Members = append(resp.Members, lm)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	if g != nil {
		c.settle(g)
	}
	c.reply(id, resp)
	c.advance(now)
}

// leave removes one member and returns its error code.
func (c *Coordinator) leave(g *group, memberID string, instanceID *string) int16 {
	switch {
	case g == nil:
		return kerr.UnknownMemberID.Code
	case memberID == "":
		if instanceID == nil {
			return kerr.UnknownMemberID.Code
		}
		current, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		c.removeMember(g, g.members[current])
		return 0
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		return 0
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	c.removeMember(g, g.members[memberID])
	return 0
}
