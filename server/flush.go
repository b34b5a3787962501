package server

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/sequencer"
)

// pendingBatch is one produced batch waiting in a flush buffer, with the
// callback that answers its producer.
type pendingBatch struct {
	commit sequencer.BatchCommit // Pos and Len locate it in the object
	done   func(sequencer.BatchResult)
}

// sealedObject is a closed flush buffer: one data object holding the batches
// of many partitions side by side.
type sealedObject struct {
	key     string
	data    []byte
	batches []pendingBatch
}

// flushCore is the sans-I/O flush window. Batches are appended to the open
// buffer; the buffer is sealed when the window that began with its first
// batch ends, or when it reaches the byte limit. It reads no clock: now is an
// argument.
type flushCore struct {
	keyPrefix string // unique per agent incarnation
	window    time.Duration
	sizeMax   int
	objectSeq uint64

	buf      []byte
	batches  []pendingBatch
	lastSize int // the previous object's size: the next buffer starts that big
	openedAt time.Time // when the first batch of the open buffer came
}

func newFlushCore(keyPrefix string, window time.Duration, sizeMax int) *flushCore {
	return &flushCore{keyPrefix: keyPrefix, window: window, sizeMax: sizeMax}
}

// add copies batch into the open buffer. It returns the buffer sealed if it
// is now full, and whether this batch opened a new window (the caller then
// arms a timer for deadline()).
func (f *flushCore) add(now time.Time, batch []byte, c sequencer.BatchCommit, done func(sequencer.BatchResult)) (sealed *sealedObject, opened bool) {
	if len(f.batches) == 0 {
		f.openedAt = now
		opened = true
		if f.buf == nil {
			// Start as big as the last object was, so that a steady load
			// does not regrow the buffer by copying within every window.
			f.buf = make([]byte, 0, min(f.sizeMax, max(f.lastSize+f.lastSize/4, 64<<10)))
		}
	}
	c.Pos, c.Len = int64(len(f.buf)), int64(len(batch))
	f.buf = append(f.buf, batch...)
	f.batches = append(f.batches, pendingBatch{commit: c, done: done})
	if len(f.buf) >= f.sizeMax {
		return f.seal(), opened
	}
	return nil, opened
}

// deadline is when the open buffer must be sealed.
func (f *flushCore) deadline() time.Time { return f.openedAt.Add(f.window) }

// tick seals the open buffer if its window has ended.
func (f *flushCore) tick(now time.Time) *sealedObject {
	if len(f.batches) == 0 || now.Before(f.deadline()) {
		return nil
	}
	return f.seal()
}

// seal closes the open buffer, whatever its age (also used at shutdown).
func (f *flushCore) seal() *sealedObject {
	if len(f.batches) == 0 {
		return nil
	}
	f.objectSeq++
	f.lastSize = len(f.buf)
	o := &sealedObject{
		key:     fmt.Sprintf("data/%s/%020d", f.keyPrefix, f.objectSeq),
		data:    f.buf,
		batches: f.batches,
	}
	// The sealed buffer now belongs to the object: cached slices of it are
	// served to consumers later, so it is never reused.
	f.buf, f.batches = nil, nil
	return o
}
