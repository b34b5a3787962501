package server

// DeleteGroups, versions 0 to 2: deletes groups without members, with their committed offsets.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.DeleteGroupsRequest), 0, 2, forwardToSequencer) }
