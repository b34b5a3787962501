package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat (key 12), versions 0-4, as Kafka's handleHeartbeat: a heartbeat
// from a current member of the current generation restarts its session.
// During a join phase the answer is REBALANCE_IN_PROGRESS, which tells the
// member to rejoin. After the join phase, while the group waits for the
// leader's SyncGroup, the answer is no error, as in Kafka: clients heartbeat
// between their JoinGroup response and their SyncGroup, and an error there
// would send them back to rejoin. Otherwise UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION or FENCED_INSTANCE_ID, as for SyncGroup.
func (c *Coordinator) Heartbeat(now time.Time, id uint64, req *kmsg.HeartbeatRequest) {
	c.advance(now)
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(req.Version)
	resp.ErrorCode = c.heartbeat(req)
	c.reply(id, resp)
	c.advance(now)
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		c.armSession(g, m)
		return kerr.RebalanceInProgress.Code
	case stateCompletingRebalance, stateStable:
		c.armSession(g, m)
		return 0
	}
	return kerr.UnknownMemberID.Code
}
