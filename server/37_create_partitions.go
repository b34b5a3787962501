package server

// CreatePartitions, versions 0 to 3. Counts only grow; validate_only checks
// and changes nothing.

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.CreatePartitionsRequest), 0, 3, handleCreatePartitions) }

func handleCreatePartitions(a *Agent, c *call) {
	req := c.req.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	resp.Topics = make([]kmsg.CreatePartitionsResponseTopic, len(req.Topics))
	var wg sync.WaitGroup
	for i := range req.Topics {
		rt := &req.Topics[i]
		out := &resp.Topics[i]
		*out = kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = rt.Topic
		wg.Add(1)
		submit(a, &sequencer.CreatePartitionsRequest{Name: rt.Topic, Count: rt.Count, ValidateOnly: req.ValidateOnly},
			func(r *sequencer.TopicReply) {
				out.ErrorCode = r.Err
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
