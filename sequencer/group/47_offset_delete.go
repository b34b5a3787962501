package group

// HasMembers reports whether the group has members, that is, whether it is
// in a state other than Empty. OffsetDelete (key 47) may delete any offset
// of a group without members; Kafka refuses, with GROUP_SUBSCRIBED_TO_TOPIC,
// only the topics that the members of a group with members subscribe to.
// Pending members (sent MEMBER_ID_REQUIRED, not yet joined) do not count.
func (c *Coordinator) HasMembers(group string) bool {
	g := c.groups[group]
	return g != nil && len(g.members) > 0
}
