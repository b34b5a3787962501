package bench

import (
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Histogram counts latencies in log-linear buckets of microseconds: exact
// below 32 µs, then 16 buckets per power of two, so any quantile is within
// about 3% (half a bucket) of the truth. Record is lock-free, because
// franz-go calls promises from several goroutines at up to a few hundred
// thousand records a second.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
}

const (
	histSubBits = 4
	histSub     = 1 << histSubBits // buckets per power of two
	// Enough buckets for any uint64 of microseconds: the top bucket is
	// (64-histSubBits+1)*histSub - 1.
	histBuckets = (64 - histSubBits + 1) * histSub
)

// bucketOf maps microseconds to a bucket index.
func bucketOf(us uint64) int {
	if us < 2*histSub {
		return int(us)
	}
	e := bits.Len64(us) - (histSubBits + 1)
	return (e+1)*histSub + int(us>>e) - histSub
}

// bucketLow is the smallest value in bucket i; bucketLow(i+1) is one past
// its largest.
func bucketLow(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	e := i/histSub - 1
	return uint64(i%histSub+histSub) << e
}

// Record counts one latency. Negative durations (clock steps) count as 0.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(uint64(max(d, 0)/time.Microsecond))].Add(1)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if n := o.counts[i].Load(); n > 0 {
			h.counts[i].Add(n)
		}
	}
}

// Count is how many latencies were recorded.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Quantile returns the latency below which a fraction q of the recorded
// ones fall (the middle of its bucket), or 0 when none were recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total-1)) + 1 // 1-based rank of the q-th value
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			lo, hi := bucketLow(i), bucketLow(i+1)
			return time.Duration(lo+(hi-lo)/2) * time.Microsecond
		}
	}
	return h.Max()
}

// Max returns the upper end of the highest non-empty bucket.
func (h *Histogram) Max() time.Duration {
	for i := len(h.counts) - 1; i >= 0; i-- {
		if h.counts[i].Load() > 0 {
			return time.Duration(bucketLow(i+1)-1) * time.Microsecond
		}
	}
	return 0
}

// Latency is a histogram's summary, in milliseconds for JSON readers.
type Latency struct {
	Count  uint64  `json:"count"`
	P50ms  float64 `json:"p50_ms"`
	P90ms  float64 `json:"p90_ms"`
	P99ms  float64 `json:"p99_ms"`
	P999ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Summary returns the histogram's percentiles.
func (h *Histogram) Summary() Latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Latency{Count: h.Count(), P50ms: ms(h.Quantile(0.50)), P90ms: ms(h.Quantile(0.90)),
		P99ms: ms(h.Quantile(0.99)), P999ms: ms(h.Quantile(0.999)), MaxMs: ms(h.Max())}
}

func (l Latency) String() string {
	return fmt.Sprintf("p50 %s p90 %s p99 %s p99.9 %s max %s",
		fmtMs(l.P50ms), fmtMs(l.P90ms), fmtMs(l.P99ms), fmtMs(l.P999ms), fmtMs(l.MaxMs))
}

// fmtMs prints milliseconds with the precision that matters at that size.
func fmtMs(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.0fµs", ms*1000)
	case ms < 10:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1fms", ms)
	default:
		return fmt.Sprintf("%.0fms", ms)
	}
}

// histBarWidth is the width of the longest bar WriteText draws.
const histBarWidth = 40

// rowBounds are WriteText's row boundaries in microseconds: a 1-2-5 series,
// log scale with labels people read at a glance.
var rowBounds = func() []uint64 {
	var b []uint64
	for decade := uint64(1); decade <= 1e12; decade *= 10 {
		b = append(b, decade, 2*decade, 5*decade)
	}
	return b
}()

// rowOf is the row of a bucket: the last bound at or below its middle.
// A bucket is at most 1/16 of its value wide, so a bucket straddling a
// bound is put on the side holding most of it.
func rowOf(bucket int) int {
	lo, hi := bucketLow(bucket), bucketLow(bucket+1)
	mid := lo + (hi-lo)/2
	r := sort.Search(len(rowBounds), func(i int) bool { return rowBounds[i] > mid }) - 1
	return max(r, 0)
}

// WriteText draws the histogram with one row per 1-2-5 step of latency
// (log scale), from the lowest to the highest non-empty row, with each
// row's share and the cumulative share.
func (h *Histogram) WriteText(w io.Writer, title string) {
	total := h.Count()
	fmt.Fprintf(w, "%s, %d samples:\n", title, total)
	if total == 0 {
		return
	}
	rows := make([]uint64, len(rowBounds))
	for i := range h.counts {
		if n := h.counts[i].Load(); n > 0 {
			rows[rowOf(i)] += n
		}
	}
	first, last := -1, 0
	var peak uint64
	for k, n := range rows {
		if n > 0 {
			if first < 0 {
				first = k
			}
			last = k
			peak = max(peak, n)
		}
	}
	fmt.Fprintf(w, "  %19s %-*s %7s %7s\n", "latency", histBarWidth, "", "share", "cum.")
	var cum uint64
	for k := first; k <= last; k++ {
		cum += rows[k]
		lo := float64(rowBounds[k]) / 1000
		hi := "…"
		if k+1 < len(rowBounds) {
			hi = fmtMs(float64(rowBounds[k+1]) / 1000)
		}
		bar := strings.Repeat("#", int((rows[k]*histBarWidth+peak-1)/peak))
		fmt.Fprintf(w, "  %8s – %-8s %-*s %6.2f%% %6.2f%%\n", fmtMs(lo), hi, histBarWidth, bar,
			100*float64(rows[k])/float64(total), 100*float64(cum)/float64(total))
	}
}
