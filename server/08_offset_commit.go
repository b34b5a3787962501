package server

// OffsetCommit, versions 0 to 8: commits a group's offsets through the metadata log; acknowledged only once durable.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.OffsetCommitRequest), 0, 8, forwardToSequencer) }
