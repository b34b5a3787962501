package server

// FindCoordinator, versions 0 to 4. This agent answers for every group key,
// as it leads every partition (see Metadata): behind a load balancer every
// agent advertises the balancer. Transactions are not served, so a
// transaction coordinator lookup fails as InitProducerId with a
// transactional id does.
//
// Listing this API matters even to clients that use no groups: librdkafka
// dates its LZ4 support by FindCoordinator v0 in ApiVersions, and without it
// silently sends batches configured for lz4 uncompressed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(new(kmsg.FindCoordinatorRequest), 0, 4, handleFindCoordinator) }

func handleFindCoordinator(a *Agent, c *call) {
	req := c.req.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = a.coordinator(req.CoordinatorType)
		c.respond(resp)
		return
	}
	for _, key := range req.CoordinatorKeys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key = key
		co.ErrorCode, co.NodeID, co.Host, co.Port = a.coordinator(req.CoordinatorType)
		resp.Coordinators = append(resp.Coordinators, co)
	}
	c.respond(resp)
}

// coordinator answers one lookup: this agent for a group (key type 0).
func (a *Agent) coordinator(keyType int8) (code int16, node int32, host string, port int32) {
	switch keyType {
	case 0:
		return 0, a.cfg.NodeID, a.cfg.AdvertiseHost, a.cfg.AdvertisePort
	case 1:
		return kerr.TransactionalIDAuthorizationFailed.Code, -1, "", -1
	default:
		return kerr.InvalidRequest.Code, -1, "", -1
	}
}
