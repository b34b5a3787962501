package server

// Fetch, versions 4 to 12 (v13 names topics by id and is not served).
//
// read_uncommitted and read_committed behave alike: there are no
// transactions, so everything below the high watermark is committed. A fetch
// that finds fewer than min_bytes waits for new data up to max_wait_ms.
// Fetch sessions are not kept: the response's session id is 0, so clients
// send full fetches.

import (
	"github.com/sluicedb/sluice/server/core"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
)

func init() { register(new(kmsg.FetchRequest), 4, 12, handleFetch) }

// fetchWaitMax bounds a long poll whatever the client asks.
const fetchWaitMax = 30 * time.Second

func handleFetch(a *Agent, c *call) {
	req := c.req.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		c.respond(resp)
		return
	}
	var parts []*core.PartRead
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, &core.PartRead{Topic: t.Topic, Partition: p.Partition, Offset: p.FetchOffset, MaxBytes: p.PartitionMaxBytes})
		}
	}
	maxBytes := int64(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	wait := min(time.Duration(req.MaxWaitMillis)*time.Millisecond, fetchWaitMax)
	deadline := time.Now().Add(wait)

	// Fast path, on the event loop: the data is there and cached.
	changed := a.changes()
	total, anyErr := a.plan(parts, maxBytes)
	if anyErr || total >= int64(req.MinBytes) || wait <= 0 {
		f := &batchFinder{a: a}
		if f.cachedAll(parts) {
			a.answerFetch(c, req, resp, parts, f)
			return
		}
		f.release()
	}
	go func() {
		// Wait for data until the deadline, or until the agent closes:
		// then answer with what there is (waiting on would spin, its
		// context being done at once on every pass).
		for !anyErr && total < int64(req.MinBytes) && time.Now().Before(deadline) && a.ctx.Err() == nil {
			timer := time.NewTimer(time.Until(deadline))
			select {
			case <-changed:
			case <-timer.C:
			case <-a.ctx.Done():
			}
			timer.Stop()
			changed = a.changes()
			total, anyErr = a.plan(parts, maxBytes)
		}
		f := &batchFinder{a: a}
		if err := f.load(a.ctx, parts); err != nil {
			a.log.Error("fetch could not read stored batches", "err", err)
			f.release()
			for _, pr := range parts {
				if len(pr.Entries) > 0 {
					pr.Err, pr.Entries, pr.Batches = kerr.KafkaStorageError.Code, nil, nil
				}
			}
		}
		a.answerFetch(c, req, resp, parts, f)
	}()
}

// answerFetch writes the response in request order, with the cached record
// batches written by reference (writev), never copied. The finder's values
// are held until the write is done.
func (a *Agent) answerFetch(c *call, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, parts []*core.PartRead, f *batchFinder) {
	if resp.ErrorCode != 0 {
		f.release()
		c.respond(resp)
		return
	}
	var n int64
	for _, pr := range parts {
		for _, b := range pr.Batches {
			n += int64(len(b))
		}
	}
	a.metrics.fetchedBytes.Add(n)
	scratch := bytebufferpool.Get()
	var vec [][]byte
	vec, scratch.B = encodeFetch(scratch.B, c.hdr.CorrelationID, c.hdr.APIVersion, req.Topics, parts)
	c.respondVec(scratch, vec, f.release)
}
