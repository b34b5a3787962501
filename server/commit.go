package server

import (
	"context"
	"time"

	"github.com/sluicedb/sluice/cache"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// putAttemptsMax bounds how often a data object PUT is tried before its
// batches fail with a retriable error (the producers then retry).
const putAttemptsMax = 5

// commitTimeout bounds how long a commit may wait for the sequencer (which
// keeps retrying its log append while the store is down). Past it the
// batches fail with REQUEST_TIMED_OUT: never acknowledged, so the producers
// retry, and an idempotent retry of a commit that did land later gets its
// original offsets.
const commitTimeout = 15 * time.Second

// The write path's shell: core.Writer decides, these functions carry out its
// Ready (PUTs on goroutines, commits to the sequencer in order) and feed the
// outcomes back. writeMu guards the Writer.

// appendBatch adds a validated batch to the flush window. done is called
// exactly once, from another goroutine, with the batch's outcome.
func (a *Agent) appendBatch(batch []byte, c sequencer.BatchCommit, done func(sequencer.BatchResult)) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	// Back-pressure: while the store or the sequencer is behind, at most
	// backlogObjects objects wait. This holds the connection's event loop,
	// so its producers' TCP windows fill and they slow down, rather than
	// the agent's memory growing without bound.
	for a.writer.Backlog() >= backlogObjects*a.cfg.FlushBytes && a.ctx.Err() == nil {
		a.drained.Wait()
	}
	deadline, open := a.writer.Append(time.Now(), batch, c, done)
	if open && !deadline.Equal(a.timerAt) {
		// A new window, or an idle deadline that moved with this batch.
		a.timerAt = deadline
		wait := time.Until(deadline)
		if a.timer == nil {
			a.timer = time.AfterFunc(wait, a.flushDue)
		} else {
			a.timer.Reset(wait)
		}
	}
	a.drive()
}

// flushDue runs when a flush window ends.
func (a *Agent) flushDue() {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.writer.Tick(time.Now())
	a.drive()
}

// flushNow seals the open buffer at once (shutdown).
func (a *Agent) flushNow() {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.writer.SealNow()
	a.drive()
}

// writeThrough puts a freshly committed object into the cache, so that
// consumers waiting for its batches find them there. The cache now owns the
// buffer: it is recycled once the cache drops it and no response holds it.
func (a *Agent) writeThrough(o *core.SealedObject, batches []core.Committed) {
	for _, c := range batches {
		a.metrics.producedBatches.Add(1)
		a.metrics.producedBytes.Add(c.Entry.Len)
	}
	a.cache.Put(cache.WrittenKey(o.Key), o.Data, a.recycler())
}

// backlogObjects bounds the sealed objects an agent holds in memory while it
// writes and commits them.
const backlogObjects = 4

// drive carries out the Writer's Ready. Called with writeMu held. Commits
// are submitted in order while the lock is held; Submit only enqueues.
func (a *Agent) drive() {
	a.drained.Broadcast() // a PUT or commit may have finished
	rd := a.writer.Ready()
	for _, o := range rd.Puts {
		a.wg.Add(1)
		go a.putObject(o)
	}
	for _, req := range rd.Commits {
		key := req.Object
		timeout := time.AfterFunc(commitTimeout, func() {
			a.log.Warn("commit timed out; failing its batches", "object", key)
			a.writeMu.Lock()
			defer a.writeMu.Unlock()
			a.writer.CommitDone(key, nil) // a no-op if the reply came first
			a.drive()
		})
		a.wg.Add(1)
		submit(a, req, func(reply *sequencer.CommitReply) {
			defer a.wg.Done()
			timeout.Stop()
			a.writeMu.Lock()
			defer a.writeMu.Unlock()
			a.writer.CommitDone(key, reply)
			a.drive()
		})
	}
}

// putObject writes one data object and reports the outcome. Failed attempts
// are spaced out; the Writer decides whether to try again.
func (a *Agent) putObject(o *core.SealedObject) {
	defer a.wg.Done()
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	err := a.store.Put(ctx, o.Key, o.Data, objectio.PutOptions{})
	cancel()
	if err == nil {
		a.metrics.objectsWritten.Add(1)
		a.metrics.objectBytes.Add(int64(len(o.Data)))
	} else {
		a.metrics.objectFailures.Add(1)
		a.log.Warn("data object write failed", "object", o.Key, "err", err)
		select {
		case <-time.After(50 * time.Millisecond):
		case <-a.ctx.Done():
		}
	}
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.writer.PutDone(o.Key, err)
	a.drive()
}
