package server

// JoinGroup, versions 0 to 9: joins a group, including the v4+ member-id-required round trip and static membership (v5+). It waits in the sequencer for the other members, never on the event loop.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.JoinGroupRequest), 0, 9, forwardToSequencer) }
