package server

// LeaveGroup, versions 0 to 5: removes members (batched from v3) and starts a rebalance.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.LeaveGroupRequest), 0, 5, forwardToSequencer) }
