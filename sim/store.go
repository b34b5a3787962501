package sim

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
)

var errInjected = errors.New("sim: injected storage error")

// Store is the simulated object store, with S3's semantics: conditional
// create (If-None-Match: *) decided atomically when the request is applied,
// strongly consistent reads and LISTs, and per-request latency and faults. A
// fault is failed-before (nothing happens) or failed-after (the request is
// applied, and an error is reported anyway).
type Store struct {
	w       *World
	objects map[string][]byte

	// What the log says, kept as entries land, for discovery and the
	// checker: the writer of each entry, and the newest epoch's owner.
	writers    map[uint64]string
	epochOwner string
	epochIndex uint64
}

// noteLog records a log entry as it lands.
func (s *Store) noteLog(key string, data []byte) {
	index, ok := sequencer.ParseIndexKey(key, sequencer.LogPrefix)
	if !ok {
		return
	}
	e, err := sequencer.UnmarshalEntry(data)
	if err != nil {
		s.w.check.violation("log entry %d does not decode: %v", index, err)
		return
	}
	s.writers[index] = e.Writer
	for _, op := range e.Ops {
		if op.Epoch != nil && index > s.epochIndex {
			s.epochIndex, s.epochOwner = index, op.Epoch.Owner
		}
	}
}

// logWriter returns who wrote log entry index, if it exists.
func (s *Store) logWriter(index uint64) (string, bool) {
	w, ok := s.writers[index]
	return w, ok
}

func (s *Store) latency() time.Duration {
	return s.w.between(s.w.cfg.StoreLatencyMin, s.w.cfg.StoreLatencyMax)
}

// outcome decides a request's fault up front, so that the draw does not
// depend on what else happens meanwhile.
func (s *Store) outcome() (before, after bool) {
	return s.w.fault(s.w.cfg.StoreFailBefore), s.w.fault(s.w.cfg.StoreFailAfter)
}

// Put writes data; with ifAbsent it fails with objectio.ErrExists if key exists.
func (s *Store) Put(key string, data []byte, ifAbsent bool, done func(error)) {
	before, after := s.outcome()
	data = append([]byte(nil), data...)
	s.w.after(s.latency(), "store put "+key, func() {
		if before {
			done(errInjected)
			return
		}
		var err error
		if _, exists := s.objects[key]; exists && ifAbsent {
			err = objectio.ErrExists
		} else {
			s.objects[key] = data
			s.noteLog(key, data)
		}
		if after {
			err = errInjected
		}
		done(err)
	})
}

// Get reads [off, off+n) of key (n < 0: to the end).
func (s *Store) Get(key string, off, n int64, done func(data []byte, found bool, err error)) {
	before, _ := s.outcome()
	s.w.after(s.latency(), "store get "+key, func() {
		if before {
			done(nil, false, errInjected)
			return
		}
		obj, ok := s.objects[key]
		if !ok {
			done(nil, false, nil)
			return
		}
		end := int64(len(obj))
		if n >= 0 && off+n < end {
			end = off + n
		}
		if off > end {
			done(nil, false, errors.New("sim: range past the end"))
			return
		}
		done(append([]byte(nil), obj[off:end]...), true, nil)
	})
}

// List returns every key with prefix, sorted.
func (s *Store) List(prefix string, done func(keys []string, err error)) {
	before, _ := s.outcome()
	s.w.after(s.latency(), "store list "+prefix, func() {
		if before {
			done(nil, errInjected)
			return
		}
		done(s.keys(prefix), nil)
	})
}

// keys lists synchronously (for the checker and discovery), sorted so that
// map order never shows.
func (s *Store) keys(prefix string) []string {
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
