package server

// Heartbeat, versions 0 to 4: keeps a member's session alive, and tells it of a rebalance.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.HeartbeatRequest), 0, 4, forwardToSequencer) }
