package sim

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/sluicedb/sluice/objectio"
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
