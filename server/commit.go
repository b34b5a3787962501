package server

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// putAttemptsMax bounds how often a data object PUT is tried before its
// batches fail with a retriable error (the producers then retry).
const putAttemptsMax = 5

// appendBatch adds a validated batch to the flush window. done is called
// exactly once, from another goroutine, with the batch's outcome.
func (a *Agent) appendBatch(batch []byte, c sequencer.BatchCommit, done func(sequencer.BatchResult)) {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	sealed, opened := a.flush.Add(time.Now(), batch, c, done)
	if sealed != nil {
		a.objects.push(sealed)
		return
	}
	if opened {
		wait := time.Until(a.flush.Deadline())
		if a.timer == nil {
			a.timer = time.AfterFunc(wait, a.flushDue)
		} else {
			a.timer.Reset(wait)
		}
	}
}

// flushDue runs when a flush window ends.
func (a *Agent) flushDue() {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	if sealed := a.flush.Tick(time.Now()); sealed != nil {
		a.objects.push(sealed)
	}
}

// flushNow seals the open buffer at once (shutdown).
func (a *Agent) flushNow() {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	if sealed := a.flush.Seal(); sealed != nil {
		a.objects.push(sealed)
	}
}

// commitQueue writes sealed objects concurrently but commits them to the
// sequencer strictly in seal order. An idempotent producer may have batch
// seq 0 in object k and seq 1 in object k+1; committing k+1 first would be an
// out-of-order sequence.
type commitQueue struct {
	agent *Agent
	mu    sync.Mutex
	queue []*objectWrite // in seal order
}

type objectWrite struct {
	obj  *core.SealedObject
	done bool  // the PUT finished
	err  error // the PUT's final outcome
}

// push starts writing a sealed object. Called with flushMu held, so objects
// enter the queue in seal order.
func (q *commitQueue) push(o *core.SealedObject) {
	w := &objectWrite{obj: o}
	q.mu.Lock()
	q.queue = append(q.queue, w)
	q.mu.Unlock()
	q.agent.wg.Add(1)
	go func() {
		defer q.agent.wg.Done()
		err := q.agent.putObject(o)
		q.mu.Lock()
		w.done, w.err = true, err
		q.mu.Unlock()
		q.advance()
	}()
}

// advance submits the commits of every written object at the head of the
// queue. Submit only enqueues, so holding mu keeps the submission order.
func (q *commitQueue) advance() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) > 0 && q.queue[0].done {
		w := q.queue[0]
		q.queue = q.queue[1:]
		if w.err != nil {
			q.agent.log.Error("data object write failed; producers will retry", "object", w.obj.Key, "err", w.err)
			q.agent.metrics.objectFailures.Add(1)
			failBatches(w.obj, kerr.KafkaStorageError.Code)
			continue
		}
		q.agent.commitObject(w.obj)
	}
}

// putObject writes a data object, retrying failures a bounded number of times.
// Data keys are unique, so a retry after an ambiguous failure is harmless.
func (a *Agent) putObject(o *core.SealedObject) error {
	var err error
	for attempt := 0; attempt < putAttemptsMax; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			case <-a.ctx.Done():
				return a.ctx.Err()
			}
		}
		ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
		err = a.store.Put(ctx, o.Key, o.Data, objectio.PutOptions{})
		cancel()
		if err == nil {
			a.metrics.objectsWritten.Add(1)
			a.metrics.objectBytes.Add(int64(len(o.Data)))
			return nil
		}
	}
	return err
}

// commitObject asks the sequencer to order the object's batches, then
// answers each producer. A batch's bytes are patched with the offset it got
// and written through to the cache before its producer hears of it.
func (a *Agent) commitObject(o *core.SealedObject) {
	req := &sequencer.CommitRequest{Object: o.Key, Batches: make([]sequencer.BatchCommit, len(o.Batches))}
	for i := range o.Batches {
		req.Batches[i] = o.Batches[i].Commit
	}
	a.wg.Add(1)
	submit(a, req, func(reply *sequencer.CommitReply) {
		defer a.wg.Done()
		for i := range o.Batches {
			res := reply.Results[i]
			b := &o.Batches[i]
			if res.Err == 0 {
				a.metrics.producedBatches.Add(1)
				a.metrics.producedBytes.Add(b.Commit.Len)
			}
			if res.Err == 0 && !res.Dup {
				bytes := o.Data[b.Commit.Pos : b.Commit.Pos+b.Commit.Len]
				codec.Batch(bytes).Patch(res.BaseOffset, 0)
				a.cache.Put(cache.Key(o.Key, b.Commit.Pos), bytes)
			}
		}
		a.cache.Settle()
		for i := range o.Batches {
			o.Batches[i].Done(reply.Results[i])
		}
	})
}

func failBatches(o *core.SealedObject, code int16) {
	for i := range o.Batches {
		o.Batches[i].Done(sequencer.BatchResult{Err: code, BaseOffset: -1})
	}
}
