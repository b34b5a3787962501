package group

import "github.com/twmb/franz-go/pkg/kerr"

// DeleteGroup decides one group of a DeleteGroups (key 42), as Kafka's
// handleDeleteGroups: a group with members is NON_EMPTY_GROUP; an Empty one
// (perhaps with pending members, who are forgotten) is removed; a group
// that is neither here nor known (has no committed offsets) is
// GROUP_ID_NOT_FOUND. On 0 the caller deletes the group's offsets.
func (c *Coordinator) DeleteGroup(group string, known bool) int16 {
	if g := c.groups[group]; g != nil {
		if g.state != stateEmpty {
			return kerr.NonEmptyGroup.Code
		}
		delete(c.groups, group)
		return 0
	}
	if known {
		return 0
	}
	return kerr.GroupIDNotFound.Code
}
