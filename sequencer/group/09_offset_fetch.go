package group

// CheckFetch validates the member id and epoch an OffsetFetch (key 9, v9+)
// may carry, and returns 0 or an error code for the group.
//
// Kafka checks them only for KIP-848 consumer groups; a classic group
// ignores them (ClassicGroup.validateOffsetFetch fails only for a Dead
// group, and no group here is ever Dead). Every group here is classic, so
// the answer is always 0. KIP-447's requireStable concerns pending
// transactional offsets, which the sequencer knows of, not this package.
func (c *Coordinator) CheckFetch(group string, memberID *string, memberEpoch int32) int16 {
	return 0
}
