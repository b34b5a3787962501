package server

// ListOffsets, versions 1 to 7: latest (-1), earliest (-2), max timestamp
// (-3, v7) and the first offset at or after a timestamp.
//
// Timestamps are known per batch (its max timestamp), not per record, so a
// timestamp lookup answers the base offset of the first batch whose max
// timestamp is at or after the target, and that batch's max timestamp.
// Consumers start there and skip the earlier records themselves.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.ListOffsetsRequest), 1, 7, handleListOffsets) }

func handleListOffsets(a *Agent, c *call) {
	req := c.req.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	a.view(func(st *sequencer.State) {
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, listOffset(st, t.Topic, p))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
	c.respond(resp)
}

func listOffset(st *sequencer.State, topic string, rp kmsg.ListOffsetsRequestTopicPartition) kmsg.ListOffsetsResponseTopicPartition {
	out := kmsg.NewListOffsetsResponseTopicPartition()
	out.Partition, out.Timestamp, out.Offset = rp.Partition, -1, -1
	p := st.Partition(topic, rp.Partition)
	if p == nil {
		out.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return out
	}
	out.LeaderEpoch = 0
	switch rp.Timestamp {
	case -1:
		out.Offset = p.Next
	case -2:
		out.Offset = p.LogStart
	case -3:
		best := -1
		for i := range p.Index {
			if best < 0 || p.Index[i].MaxTimestamp > p.Index[best].MaxTimestamp {
				best = i
			}
		}
		if best >= 0 {
			out.Offset, out.Timestamp = p.Index[best].LastOffset(), p.Index[best].MaxTimestamp
		}
	default:
		if rp.Timestamp < 0 {
			out.ErrorCode = kerr.UnsupportedVersion.Code // -4 and below belong to newer versions
			return out
		}
		if i := p.FindTimestamp(rp.Timestamp); i < len(p.Index) {
			out.Offset, out.Timestamp = p.Index[i].BaseOffset, p.Index[i].MaxTimestamp
		}
	}
	return out
}
