package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/group"
)

// forwardToSequencer serves a consumer-group request: the coordinator lives
// in the sequencer, so that every agent sees one group. The request is
// re-decoded into memory of its own first: kmsg byte fields alias the
// request frame, which is reused once this request's response is written,
// while the coordinator keeps member metadata and assignments for the
// group's lifetime.
func forwardToSequencer(a *Agent, c *call) {
	own := kmsg.RequestForKey(c.req.Key())
	own.SetVersion(c.req.GetVersion())
	if err := own.ReadFrom(c.req.AppendTo(nil)); err != nil {
		// It decoded once already; encoding it back cannot fail to decode.
		panic("server: group request does not round-trip: " + err.Error())
	}
	var body any = own
	if join, ok := own.(*kmsg.JoinGroupRequest); ok {
		body = &sequencer.JoinGroup{Client: group.Client{ID: string(c.hdr.ClientID), Host: c.conn.remoteHost()}, Req: join}
	}
	a.seq.Submit(body, func(reply any) { c.respond(reply.(kmsg.Response)) })
}
