package server

// OffsetFetch, versions 0 to 8: reads committed offsets, including the v8+ multi-group form; a partition never committed answers -1 with no error.
// The coordinator is in the sequencer (see groups.go).

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.OffsetFetchRequest), 0, 8, forwardToSequencer) }
