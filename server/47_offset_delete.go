package server

// OffsetDelete, versions 0 to 0: deletes committed offsets of a group without active members.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.OffsetDeleteRequest), 0, 0, forwardToSequencer) }
