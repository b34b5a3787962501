package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler serves one Kafka API. It must answer through c.respond exactly
// once, and must not block: work that waits (on the sequencer, the store or
// a long poll) continues on another goroutine and responds from there.
type handler func(a *Agent, c *call)

// api is one served Kafka API: its versions and its handler. Each NN_name.go
// file registers itself in init, and ApiVersions is built from this table, so
// nothing is advertised that is not handled.
type api struct {
	key                    int16
	minVersion, maxVersion int16
	fn                     handler
}

var apis = map[int16]api{}

func register(req kmsg.Request, minVersion, maxVersion int16, fn handler) {
	key := req.Key()
	if _, dup := apis[key]; dup {
		panic("server: api registered twice: " + kmsg.NameForKey(key))
	}
	if maxVersion > req.MaxVersion() {
		panic("server: api registered beyond kmsg's versions: " + kmsg.NameForKey(key))
	}
	apis[key] = api{key: key, minVersion: minVersion, maxVersion: maxVersion, fn: fn}
}

// servedAPIs lists the registered APIs by key, for ApiVersions.
func servedAPIs() []api {
	out := make([]api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}
