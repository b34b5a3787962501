package server

// InitProducerId, versions 0 to 4, for idempotent producers. A request with a
// transactional id is refused: transactions are not served.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.InitProducerIDRequest), 0, 4, handleInitProducerID) }

func handleInitProducerID(a *Agent, c *call) {
	req := c.req.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = kerr.TransactionalIDAuthorizationFailed.Code, -1, -1
		c.respond(resp)
		return
	}
	submit(a, &sequencer.InitProducerRequest{ProducerID: req.ProducerID, Epoch: req.ProducerEpoch},
		func(r *sequencer.InitProducerReply) {
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = r.Err, r.ProducerID, r.Epoch
			c.respond(resp)
		})
}
