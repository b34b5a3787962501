package server

// ApiVersions, versions 0 to 3. The list comes from the handler registry.
// A request at a version above 3 is answered at version 0 with
// UNSUPPORTED_VERSION and the list, as Kafka does, so that the client can
// retry at a version both sides know.

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/sluicedb/sluice/codec"
)

func init() { register(new(kmsg.ApiVersionsRequest), 0, 3, handleAPIVersions) }

func handleAPIVersions(a *Agent, c *call) {
	resp := c.req.ResponseKind().(*kmsg.ApiVersionsResponse)
	fillAPIVersions(resp)
	c.respond(resp)
}

func fillAPIVersions(resp *kmsg.ApiVersionsResponse) {
	for _, s := range servedAPIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = s.key, s.minVersion, s.maxVersion
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
}

// unsupportedVersion answers a request whose version is not served. An error
// return closes the connection.
func (s *Server) unsupportedVersion(c *call, a api) error {
	if c.hdr.APIKey == kmsg.ApiVersions.Int16() {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		fillAPIVersions(resp)
		out := bytebufferpool.Get()
		out.B = codec.AppendResponse(out.B[:0], c.hdr.CorrelationID, resp)
		c.conn.complete(c.slot, out, nil)
		return nil
	}
	// Answer UNSUPPORTED_VERSION in the response's top-level error code when
	// kmsg knows this version and the response has one; otherwise the
	// request cannot be answered in the protocol.
	req := kmsg.RequestForKey(c.hdr.APIKey)
	if c.hdr.APIVersion >= 0 && c.hdr.APIVersion <= req.MaxVersion() {
		resp := req.ResponseKind()
		resp.SetVersion(c.hdr.APIVersion)
		if f := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
			f.SetInt(int64(kerr.UnsupportedVersion.Code))
			c.respond(resp)
			return nil
		}
	}
	return fmt.Errorf("%s v%d is not supported (served: v%d to v%d)",
		kmsg.NameForKey(c.hdr.APIKey), c.hdr.APIVersion, a.minVersion, a.maxVersion)
}
