package server

// DeleteTopics, versions 0 to 6 (v6 may name topics by id).

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.DeleteTopicsRequest), 0, 6, handleDeleteTopics) }

func handleDeleteTopics(a *Agent, c *call) {
	req := c.req.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	names := append([]string(nil), req.TopicNames...)
	if req.Version >= 6 {
		names = names[:0]
		a.view(func(st *sequencer.State) {
			for _, t := range req.Topics {
				names = append(names, topicName(st, t.Topic, t.TopicID))
			}
		})
	}
	resp.Topics = make([]kmsg.DeleteTopicsResponseTopic, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		out := &resp.Topics[i]
		*out = kmsg.NewDeleteTopicsResponseTopic()
		name := n
		out.Topic = &name
		if n == "" {
			out.ErrorCode = kerr.UnknownTopicID.Code
			continue
		}
		wg.Add(1)
		submit(a, &sequencer.DeleteTopicRequest{Name: n}, func(r *sequencer.TopicReply) {
			out.ErrorCode, out.TopicID = r.Err, r.ID
			wg.Done()
		})
	}
	go func() {
		wg.Wait()
		c.respond(resp)
	}()
}

// topicName resolves a topic named directly or by id; "" if unknown.
func topicName(st *sequencer.State, name *string, id [16]byte) string {
	if name != nil && *name != "" {
		return *name
	}
	for _, n := range st.TopicNames() {
		if st.Topics[n].ID == id {
			return n
		}
	}
	return ""
}
