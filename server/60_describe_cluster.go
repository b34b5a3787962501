package server

// DescribeCluster, versions 0 to 1: this agent is the cluster's one broker
// and its controller, as in Metadata.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() { register(new(kmsg.DescribeClusterRequest), 0, 1, handleDescribeCluster) }

func handleDescribeCluster(a *Agent, c *call) {
	req := c.req.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID, resp.ControllerID = a.cfg.ClusterID, a.cfg.NodeID
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = a.cfg.NodeID, a.cfg.AdvertiseHost, a.cfg.AdvertisePort
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	c.respond(resp)
}
