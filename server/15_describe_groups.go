package server

// DescribeGroups, versions 0 to 5: describes groups' state, protocol and members.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.DescribeGroupsRequest), 0, 5, forwardToSequencer) }
