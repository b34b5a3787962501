package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// window is what a meter saw in one interval (a second of progress).
type window struct {
	hist                   Histogram
	records, bytes, errors atomic.Int64
	start                  time.Time
}

// meter counts records, bytes, errors and latencies, one window per
// progress interval. Writers never lock: they add to the current window.
// A writer that loaded the window just before a rotation adds to the old
// one; that sample misses the progress line but not the total, which is
// merged from every window once the writers are done.
type meter struct {
	cur      atomic.Pointer[window]
	firstErr atomic.Pointer[error]
	mu       sync.Mutex
	past     []*window
}

func newMeter(now time.Time) *meter {
	m := &meter{}
	m.cur.Store(&window{start: now})
	return m
}

// observe counts one record of n bytes, with its latency when the meter
// measures one (latency >= 0).
func (m *meter) observe(latency time.Duration, n int) {
	w := m.cur.Load()
	w.records.Add(1)
	w.bytes.Add(int64(n))
	if latency >= 0 {
		w.hist.Record(latency)
	}
}

// fail counts one failed record and keeps the first error.
func (m *meter) fail(err error) {
	m.cur.Load().errors.Add(1)
	m.firstErr.CompareAndSwap(nil, &err)
}

// rotate starts a new window at now and returns the one it ends.
func (m *meter) rotate(now time.Time) *window {
	old := m.cur.Swap(&window{start: now})
	m.mu.Lock()
	m.past = append(m.past, old)
	m.mu.Unlock()
	return old
}

// total merges every window. Call it once the writers are done.
func (m *meter) total() *window {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &window{}
	for _, w := range append(m.past, m.cur.Load()) {
		t.hist.Merge(&w.hist)
		t.records.Add(w.records.Load())
		t.bytes.Add(w.bytes.Load())
		t.errors.Add(w.errors.Load())
	}
	return t
}

// err is the first error seen, or nil.
func (m *meter) err() error {
	if p := m.firstErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Rate is one second's worth of a meter, for the progress line.
type Rate struct {
	MBps          float64
	RecordsPerSec float64
	Errors        int64
	P50, P99      time.Duration
	hasLatency    bool
}

func rateOf(w *window, now time.Time) Rate {
	secs := max(now.Sub(w.start).Seconds(), 1e-9)
	r := Rate{
		MBps:          float64(w.bytes.Load()) / 1e6 / secs,
		RecordsPerSec: float64(w.records.Load()) / secs,
		Errors:        w.errors.Load(),
	}
	if w.hist.Count() > 0 {
		r.P50, r.P99, r.hasLatency = w.hist.Quantile(0.5), w.hist.Quantile(0.99), true
	}
	return r
}

func (r Rate) String() string {
	s := fmt.Sprintf("%7.1f MB/s %8.0f rec/s", r.MBps, r.RecordsPerSec)
	if r.hasLatency {
		s += fmt.Sprintf("  p50 %7s p99 %7s", fmtMs(float64(r.P50.Microseconds())/1000), fmtMs(float64(r.P99.Microseconds())/1000))
	}
	if r.Errors > 0 {
		s += fmt.Sprintf("  %d errors", r.Errors)
	}
	return s
}

// Progress is one second of a run, reported while it goes.
type Progress struct {
	Elapsed time.Duration
	// Produce and Consume are nil when the run does not do them (yet).
	// Produce latency is Produce call to acknowledgement; Consume latency,
	// in e2e runs, is Produce call to the record's arrival at a consumer.
	Produce, Consume *Rate
}

func (p Progress) String() string {
	s := fmt.Sprintf("[%4.0fs]", p.Elapsed.Seconds())
	if p.Produce != nil {
		s += " produce " + p.Produce.String()
	}
	if p.Consume != nil {
		if p.Produce != nil {
			s += " |"
		}
		s += " consume " + p.Consume.String()
	}
	return s
}
