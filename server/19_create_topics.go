package server

// CreateTopics, versions 0 to 7. Partitions -1 means --default-partitions.
// The replication factor must be -1 or 1: the object store replicates, and
// the cluster shows clients one broker. validate_only checks and creates
// nothing.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.CreateTopicsRequest), 0, 7, handleCreateTopics) }

func handleCreateTopics(a *Agent, c *call) {
	req := c.req.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	var wg sync.WaitGroup
	for i := range req.Topics {
		rt := &req.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewCreateTopicsResponseTopic()
		out.Topic = rt.Topic
		parts := rt.NumPartitions
		if parts == -1 {
			parts = a.cfg.DefaultPartitions
		}
		if len(rt.ReplicaAssignment) > 0 {
			parts = int32(len(rt.ReplicaAssignment))
		}
		out.NumPartitions, out.ReplicationFactor = parts, 1
		if rt.ReplicationFactor != -1 && rt.ReplicationFactor != 1 {
			out.ErrorCode = kerr.InvalidReplicationFactor.Code
			msg := "replication factor must be 1 (or -1): the object store keeps the copies"
			out.ErrorMessage = &msg
			continue
		}
		configs := map[string]string{}
		for _, cfg := range rt.Configs {
			if cfg.Value != nil {
				configs[cfg.Name] = *cfg.Value
			}
		}
		wg.Add(1)
		submit(a, &sequencer.CreateTopicRequest{
			Name: rt.Topic, Partitions: parts, Configs: configs, ValidateOnly: req.ValidateOnly,
		}, func(r *sequencer.TopicReply) {
			out.ErrorCode, out.TopicID = r.Err, r.ID
			if r.Message != "" {
				out.ErrorMessage = &r.Message
			}
			wg.Done()
		})
	}
	go func() {
		wg.Wait()
		c.respond(resp)
	}()
}
