package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CheckCommit validates an OffsetCommit (key 8) against the group's
// membership, as Kafka's handleCommitOffsets and validateOffsetCommit do, and
// returns 0 or the error code for every partition in the request. The
// sequencer stores the offsets; this only decides whether it may.
//
//   - A commit that names no member (generation -1, empty member id, no
//     instance id) comes from a client that does not use group management
//     (an admin client or a simple consumer). It is allowed when the group
//     has no members, and gets UNKNOWN_MEMBER_ID otherwise.
//   - A commit that names a member must come from a current member (else
//     UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID) of the current generation
//     (else ILLEGAL_GENERATION). A group the coordinator does not know
//     answers ILLEGAL_GENERATION, which sends the member back to rejoin.
//   - After a join phase, before the leader's SyncGroup: REBALANCE_IN_PROGRESS.
//     During a join phase commits are allowed: the member learns of the
//     rebalance from its heartbeat.
//
// A valid commit from a member restarts its session, as a heartbeat does.
func (c *Coordinator) CheckCommit(now time.Time, group string, generation int32, memberID string, instanceID *string) int16 {
	c.advance(now)
	return c.checkCommit(group, generation, memberID, instanceID, false)
}

// CheckTxnCommit validates a TxnOffsetCommit (key 28) as Kafka's
// handleTxnCommitOffsets does. It differs from CheckCommit in three ways:
// a commit that names no member is always allowed (TxnOffsetCommit before
// v3 cannot name one), the group's state does not matter, and it is not a
// heartbeat.
func (c *Coordinator) CheckTxnCommit(now time.Time, group string, generation int32, memberID string, instanceID *string) int16 {
	c.advance(now)
	return c.checkCommit(group, generation, memberID, instanceID, true)
}

func (c *Coordinator) checkCommit(name string, generation int32, memberID string, instanceID *string, txn bool) int16 {
	named := generation >= 0 || memberID != "" || instanceID != nil
	g := c.groups[name]
	if g == nil {
		switch {
		case !named:
			return 0
		case !txn && generation >= 0:
			return kerr.IllegalGeneration.Code
		default:
			// Kafka makes an empty group for the commit, where the member
			// is unknown.
			return kerr.UnknownMemberID.Code
		}
	}
	if named {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if !txn && g.state != stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	if txn {
		return 0
	}
	switch g.state {
	case stateCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	case stateStable, statePreparingRebalance:
		if named {
			c.armSession(g, g.members[memberID])
		}
	}
	return 0
}
