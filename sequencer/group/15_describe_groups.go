package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetsOnlyProtocolType is the protocol type of a group known only by its
// committed offsets. Kafka reports the type the group last had, which it
// keeps in its offsets topic ("" for a group that only ever had simple
// commits); it is not kept here, so the common case is assumed. Admin
// clients accept either as a consumer group.
const offsetsOnlyProtocolType = "consumer"

// groupAuthorizedOps is what Kafka without an authorizer reports as the
// operations allowed on a group: READ (3), DELETE (6) and DESCRIBE (8).
const groupAuthorizedOps = 1<<3 | 1<<6 | 1<<8

// DescribeGroups (key 15), versions 0-6, as Kafka fills it. A group with
// members reports its state, protocol type and members (client id, host,
// instance id); once Stable also the selected protocol and each member's
// metadata and assignment. A group without members that known says has
// committed offsets is Empty. Any other group is Dead, and from v6 also
// GROUP_ID_NOT_FOUND. known may be nil.
func (c *Coordinator) DescribeGroups(now time.Time, id uint64, req *kmsg.DescribeGroupsRequest, known func(group string) bool) {
	c.advance(now)
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(req.Version)
	for _, name := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = name
		switch g := c.groups[name]; {
		case g != nil:
			describe(g, &d)
		case known != nil && known(name):
			d.State = stateEmpty.String()
			d.ProtocolType = offsetsOnlyProtocolType
		default:
			d.State = stateDead.String()
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + name + " not found."
				d.ErrorMessage = &msg
			}
		}
		if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = groupAuthorizedOps
		}
		resp.Groups = append(resp.Groups, d)
	}
	c.reply(id, resp)
}

// describe fills d as Kafka's GroupMetadata.summary does.
func describe(g *group, d *kmsg.DescribeGroupsResponseGroup) {
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sorted() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadata(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
}
