package server

// ListGroups, versions 0 to 4: lists groups with members or committed offsets (v4 filters by state).
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.ListGroupsRequest), 0, 4, forwardToSequencer) }
