package server

// Metadata, versions 0 to 12.
//
// This agent is the only broker clients see (node id cfg.NodeID at the
// advertised address), and it leads every partition: behind a load balancer
// every agent advertises the balancer. Unknown topics are created when the
// client allows it (v4+) and auto-creation is on.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.MetadataRequest), 0, 12, handleMetadata) }

func handleMetadata(a *Agent, c *call) {
	req := c.req.(*kmsg.MetadataRequest)
	var names []string
	for _, t := range req.Topics {
		if t.Topic != nil {
			names = append(names, *t.Topic)
		}
	}
	allowCreate := a.cfg.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	var valid []string
	for _, n := range names {
		if validTopicName(n) {
			valid = append(valid, n)
		}
	}
	a.ensureTopics(valid, allowCreate, func() { a.answerMetadata(c, req, names) })
}

func (a *Agent) answerMetadata(c *call, req *kmsg.MetadataRequest, names []string) {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = []kmsg.MetadataResponseBroker{a.broker()}
	resp.ClusterID = &a.cfg.ClusterID
	resp.ControllerID = a.cfg.NodeID
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	a.view(func(st *sequencer.State) {
		if all {
			names = st.TopicNames()
		}
		for _, n := range names {
			rt := kmsg.NewMetadataResponseTopic()
			name := n
			rt.Topic = &name
			t := st.Topics[n]
			switch {
			case !validTopicName(n):
				rt.ErrorCode = kerr.InvalidTopicException.Code
			case t == nil:
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rt.TopicID = t.ID
				for i := range t.Partitions {
					rt.Partitions = append(rt.Partitions, a.leaderPartition(int32(i)))
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
	c.respond(resp)
}

func (a *Agent) broker() kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = a.cfg.NodeID, a.cfg.AdvertiseHost, a.cfg.AdvertisePort
	return b
}

func (a *Agent) leaderPartition(p int32) kmsg.MetadataResponseTopicPartition {
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition, mp.Leader, mp.LeaderEpoch = p, a.cfg.NodeID, 0
	mp.Replicas, mp.ISR = []int32{a.cfg.NodeID}, []int32{a.cfg.NodeID}
	return mp
}

// validTopicName is Kafka's rule: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
func validTopicName(n string) bool {
	if n == "" || n == "." || n == ".." || len(n) > 249 {
		return false
	}
	for _, c := range []byte(n) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
