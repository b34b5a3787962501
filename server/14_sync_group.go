package server

// SyncGroup, versions 0 to 5: hands the leader's assignments to every member; followers wait for the leader.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.SyncGroupRequest), 0, 5, forwardToSequencer) }
