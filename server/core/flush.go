// Package core is the agent's sans-I/O core: state machines that read no
// clock and do no I/O, so that the simulator can drive them in virtual time.
package core

import (
	"fmt"
	"time"

	"github.com/sluicedb/sluice/sequencer"
)

// PendingBatch is one produced batch waiting in a flush buffer, with the
// callback that answers its producer.
type PendingBatch struct {
	Commit sequencer.BatchCommit // Pos and Len locate it in the object
	Done   func(sequencer.BatchResult)
}

// SealedObject is a closed flush buffer: one data object holding the batches
// of many partitions side by side.
type SealedObject struct {
	Key     string
	Data    []byte
	Batches []PendingBatch
}

// FlushConfig says when an open buffer is sealed.
type FlushConfig struct {
	// Window is the longest a batch waits: the buffer is sealed when the
	// window that began with its first batch ends.
	Window time.Duration
	// Idle, if set, seals the buffer sooner, once no batch has arrived for
	// this long. Most producers have one request in flight per broker (an
	// idempotent franz-go producer, for one), so after their requests are
	// in, nothing more can come until they are answered: waiting out the
	// window then only adds latency. It costs more objects at low load.
	Idle time.Duration
	// SizeMax seals the buffer as soon as it holds this many bytes.
	SizeMax int
}

// Flush is the sans-I/O flush window. Batches are appended to the open
// buffer; the buffer is sealed at its Deadline, or when it reaches the byte
// limit. It reads no clock: now is an argument.
type Flush struct {
	keyPrefix string // unique per agent incarnation
	cfg       FlushConfig
	objectSeq uint64

	buf      []byte
	batches  []PendingBatch
	lastSize int       // the previous object's size: the next buffer starts that big
	openedAt time.Time // when the first batch of the open buffer came
	lastAdd  time.Time // when the newest batch came

	// alloc, if set, returns an empty buffer of the given capacity (the
	// agent recycles buffers); otherwise buffers are made fresh.
	alloc func(capacity int) []byte
}

func NewFlush(keyPrefix string, cfg FlushConfig) *Flush {
	return &Flush{keyPrefix: keyPrefix, cfg: cfg}
}

// Add copies batch into the open buffer and returns the buffers it sealed:
// the open one first, if the batch does not fit beside it (so that a full
// buffer is never copied into a larger one), and the batch's own, if it
// fills it. If a buffer is left open the caller must make sure Tick runs
// at Deadline(), which may have moved.
func (f *Flush) Add(now time.Time, batch []byte, c sequencer.BatchCommit, done func(sequencer.BatchResult)) (sealed []*SealedObject) {
	if len(f.batches) > 0 && len(f.buf)+len(batch) > f.cfg.SizeMax {
		sealed = append(sealed, f.Seal())
	}
	f.lastAdd = now
	if len(f.batches) == 0 {
		f.openedAt = now
		if f.buf == nil {
			// Start as big as the last object was, so that a steady load
			// does not regrow the buffer by copying within every window.
			capacity := min(f.cfg.SizeMax, max(f.lastSize+f.lastSize/4, 64<<10))
			if f.alloc != nil {
				f.buf = f.alloc(capacity)
			} else {
				f.buf = make([]byte, 0, capacity)
			}
		}
	}
	c.Pos, c.Len = int64(len(f.buf)), int64(len(batch))
	f.buf = append(f.buf, batch...)
	f.batches = append(f.batches, PendingBatch{Commit: c, Done: done})
	if len(f.buf) >= f.cfg.SizeMax {
		sealed = append(sealed, f.Seal())
	}
	return sealed
}

// Deadline is when the open buffer must be sealed.
func (f *Flush) Deadline() time.Time {
	d := f.openedAt.Add(f.cfg.Window)
	if f.cfg.Idle > 0 {
		if idle := f.lastAdd.Add(f.cfg.Idle); idle.Before(d) {
			return idle
		}
	}
	return d
}

// Tick seals the open buffer if its deadline has passed.
func (f *Flush) Tick(now time.Time) *SealedObject {
	if len(f.batches) == 0 || now.Before(f.Deadline()) {
		return nil
	}
	return f.Seal()
}

// Seal closes the open buffer, whatever its age (also used at shutdown).
func (f *Flush) Seal() *SealedObject {
	if len(f.batches) == 0 {
		return nil
	}
	f.objectSeq++
	f.lastSize = len(f.buf)
	o := &SealedObject{
		Key:     fmt.Sprintf("data/%s/%020d", f.keyPrefix, f.objectSeq),
		Data:    f.buf,
		Batches: f.batches,
	}
	// The sealed buffer now belongs to the object: cached slices of it are
	// served to consumers later, so the flush never reuses it (the agent
	// may, once nothing holds the object).
	f.buf, f.batches = nil, nil
	return o
}

// Empty reports whether no batch is buffered.
func (f *Flush) Empty() bool { return len(f.batches) == 0 }
