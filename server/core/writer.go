package core

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
)

// Writer is the agent's write path as a sans-I/O state machine. Batches go
// into the flush window; each sealed object is written (Ready.Puts) and then
// committed to the sequencer strictly in seal order (Ready.Commits); a
// batch's done callback runs when its object's commit reply arrives, or when
// the object cannot be written or committed.
//
// Seal order matters: an idempotent producer may have sequence 0 in object k
// and sequence 1 in object k+1, and committing k+1 first would be an
// out-of-order sequence.
//
// Writer is not safe for concurrent use.
type Writer struct {
	flush       *Flush
	attemptsMax int
	queue       []*objectWrite          // sealed, not yet committed, in seal order
	committing  map[string]*objectWrite // commit sent, reply awaited
	ready       WriterReady

	// OnCommitted, if set, is called with an object and its batches that
	// got new offsets, before their producers are answered: the agent's
	// write-through into its cache. The callee takes the object's buffer.
	OnCommitted func(*SealedObject, []Committed)
	// OnDropped, if set, is called with an object none of whose batches got
	// new offsets (it failed, or held only duplicates), after its batches
	// are answered: nothing needs its buffer any more.
	OnDropped func(*SealedObject)
}

// Committed is a batch that got offsets: its stored bytes and index entry.
type Committed struct {
	Bytes []byte
	Entry sequencer.IndexEntry
}

type objectWrite struct {
	obj      *SealedObject
	attempts int
	written  bool
}

// WriterReady is what the driver must do. Puts may be written concurrently
// and reported with PutDone. Commits must be sent to the sequencer in this
// order, and each reply (or failure) reported with CommitDone.
type WriterReady struct {
	Puts    []*SealedObject
	Commits []*sequencer.CommitRequest
}

// NewWriter returns a Writer whose objects are named under keyPrefix.
// An object PUT is tried attemptsMax times before its batches fail.
func NewWriter(keyPrefix string, flush FlushConfig, attemptsMax int) *Writer {
	return &Writer{
		flush:       NewFlush(keyPrefix, flush),
		attemptsMax: attemptsMax,
		committing:  map[string]*objectWrite{},
	}
}

// Append adds a validated batch. If a buffer is left open it returns its
// deadline and open=true: the driver must call Tick then (the deadline may
// have moved since the last Append).
func (w *Writer) Append(now time.Time, batch []byte, c sequencer.BatchCommit, done func(sequencer.BatchResult)) (deadline time.Time, open bool) {
	for _, o := range w.flush.Add(now, batch, c, done) {
		w.push(o)
	}
	if w.flush.Empty() {
		return time.Time{}, false
	}
	return w.flush.Deadline(), true
}

// AllocateWith makes the flush take its buffers from alloc, which returns an
// empty buffer of the given capacity.
func (w *Writer) AllocateWith(alloc func(capacity int) []byte) { w.flush.alloc = alloc }

// Tick seals the open buffer if its window has ended.
func (w *Writer) Tick(now time.Time) {
	if sealed := w.flush.Tick(now); sealed != nil {
		w.push(sealed)
	}
}

// SealNow seals the open buffer whatever its age (shutdown).
func (w *Writer) SealNow() {
	if sealed := w.flush.Seal(); sealed != nil {
		w.push(sealed)
	}
}

func (w *Writer) push(o *SealedObject) {
	w.queue = append(w.queue, &objectWrite{obj: o, attempts: 1})
	w.ready.Puts = append(w.ready.Puts, o)
}

// PutDone reports a data object PUT. Data keys are unique, so retrying a PUT
// that failed ambiguously is harmless.
func (w *Writer) PutDone(key string, err error) {
	ow := w.find(key)
	if ow == nil || ow.written {
		return
	}
	if err == nil {
		ow.written = true
		w.advance()
		return
	}
	if ow.attempts < w.attemptsMax {
		ow.attempts++
		w.ready.Puts = append(w.ready.Puts, ow.obj)
		return
	}
	w.remove(ow)
	w.fail(ow.obj, kerr.KafkaStorageError.Code)
	w.advance()
}

func (w *Writer) find(key string) *objectWrite {
	for _, ow := range w.queue {
		if ow.obj.Key == key {
			return ow
		}
	}
	return nil
}

func (w *Writer) remove(ow *objectWrite) {
	for i, q := range w.queue {
		if q == ow {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			return
		}
	}
}

// advance sends the commits of every written object at the head of the queue.
func (w *Writer) advance() {
	for len(w.queue) > 0 && w.queue[0].written {
		ow := w.queue[0]
		w.queue = w.queue[1:]
		req := &sequencer.CommitRequest{Object: ow.obj.Key, Batches: make([]sequencer.BatchCommit, len(ow.obj.Batches))}
		for i := range ow.obj.Batches {
			req.Batches[i] = ow.obj.Batches[i].Commit
		}
		w.committing[ow.obj.Key] = ow
		w.ready.Commits = append(w.ready.Commits, req)
	}
}

// CommitDone reports the sequencer's reply to an object's commit; reply nil
// means the commit failed or timed out without an answer. Either way every
// batch is answered: a failure is retriable, and since nothing is acked
// before the sequencer says so, failing is always safe.
func (w *Writer) CommitDone(key string, reply *sequencer.CommitReply) {
	ow := w.committing[key]
	if ow == nil {
		return
	}
	delete(w.committing, key)
	o := ow.obj
	if reply == nil || len(reply.Results) != len(o.Batches) {
		w.fail(o, kerr.RequestTimedOut.Code)
		return
	}
	var committed []Committed
	for i := range o.Batches {
		res := reply.Results[i]
		c := &o.Batches[i].Commit
		if res.Err != 0 || res.Dup {
			continue
		}
		e := sequencer.IndexEntry{BaseOffset: res.BaseOffset, Records: c.Records, Object: o.Key, Pos: c.Pos, Len: c.Len, MaxTimestamp: c.MaxTimestamp}
		committed = append(committed, Committed{Bytes: o.Data[c.Pos : c.Pos+c.Len : c.Pos+c.Len], Entry: e})
	}
	if w.OnCommitted != nil && len(committed) > 0 {
		w.OnCommitted(o, committed)
	}
	for i := range o.Batches {
		res := reply.Results[i]
		if res.Err != 0 {
			res.BaseOffset = -1
		}
		o.Batches[i].Done(res)
	}
	if len(committed) == 0 && w.OnDropped != nil {
		w.OnDropped(o)
	}
}

// Backlog is the bytes of sealed objects not yet committed: being written,
// waiting for their turn, or waiting for the sequencer.
func (w *Writer) Backlog() int {
	n := 0
	for _, ow := range w.queue {
		n += len(ow.obj.Data)
	}
	for _, ow := range w.committing {
		n += len(ow.obj.Data)
	}
	return n
}

// Ready returns what the driver must do and forgets it.
func (w *Writer) Ready() WriterReady {
	rd := w.ready
	w.ready = WriterReady{}
	return rd
}

// Idle reports whether nothing is buffered, being written or being committed.
func (w *Writer) Idle() bool {
	return w.flush.Empty() && len(w.queue) == 0 && len(w.committing) == 0
}

func (w *Writer) fail(o *SealedObject, code int16) {
	for i := range o.Batches {
		o.Batches[i].Done(sequencer.BatchResult{Err: code, BaseOffset: -1})
	}
	if w.OnDropped != nil {
		w.OnDropped(o)
	}
}

// AppendServedHeader appends the header batch b is served with: its stored
// bytes up to the magic byte, with the base offset from its index entry and
// partition leader epoch 0. Fetches write this, then
// b[codec.ServedHeaderSize:]: stored bytes are never modified, so an object
// is immutable from the moment it is sealed, and the store and the cache can
// share it.
func AppendServedHeader(dst, b []byte, e sequencer.IndexEntry) []byte {
	base := e.BaseOffset
	if plantedWrongBaseOffset() {
		base++
	}
	return codec.Batch(b).AppendServedHeader(dst, base, 0)
}

// Served returns a copy of batch b as a consumer receives it, for callers
// that hand out whole batches rather than writing vectors (the simulator).
func Served(b []byte, e sequencer.IndexEntry) []byte {
	out := AppendServedHeader(make([]byte, 0, len(b)), b, e)
	return append(out, b[codec.ServedHeaderSize:]...)
}
