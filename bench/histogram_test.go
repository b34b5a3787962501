package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestHistogramBucketsAreContiguousAndTight(t *testing.T) {
	for us := uint64(0); us < 1<<22; us += 1 + us/64 {
		i := bucketOf(us)
		if lo, hi := bucketLow(i), bucketLow(i+1); us < lo || us >= hi {
			t.Fatalf("%d µs in bucket %d = [%d, %d)", us, i, lo, hi)
		}
		if w := bucketLow(i+1) - bucketLow(i); us >= 32 && float64(w)/float64(us) > 1.0/16 {
			t.Fatalf("bucket of %d µs is %d µs wide, more than 1/16 of it", us, w)
		}
	}
	if i := bucketOf(math.MaxUint64); i >= histBuckets {
		t.Fatalf("the largest value maps to bucket %d of %d", i, histBuckets)
	}
}

func TestHistogramQuantilesAreWithinHalfABucket(t *testing.T) {
	var h Histogram
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond) // 1 µs .. 10 ms, uniform
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.9, 9 * time.Millisecond}, {0.99, 9900 * time.Microsecond}} {
		got := h.Quantile(tc.q)
		if d := math.Abs(float64(got-tc.want)) / float64(tc.want); d > 0.035 {
			t.Errorf("p%v = %v, want %v within 3.5%%", tc.q*100, got, tc.want)
		}
	}
	if h.Count() != 10000 {
		t.Errorf("count %d, want 10000", h.Count())
	}
}

func TestHistogramMergeAddsCounts(t *testing.T) {
	var a, b Histogram
	a.Record(time.Millisecond)
	b.Record(time.Millisecond)
	b.Record(time.Second)
	a.Merge(&b)
	if a.Count() != 3 || a.Quantile(1) < time.Second*15/16 {
		t.Fatalf("merged: count %d, max quantile %v; want 3 and about 1s", a.Count(), a.Quantile(1))
	}
}

func TestHistogramTextHasOneRowPerStepBetweenMinAndMax(t *testing.T) {
	var h Histogram
	h.Record(300 * time.Microsecond) // row 200µs–500µs
	h.Record(30 * time.Millisecond)  // row 20ms–50ms
	var sb strings.Builder
	h.WriteText(&sb, "latency")
	// title, column header, then 200µs, 500µs, 1ms, 2ms, 5ms, 10ms, 20ms.
	lines := strings.Split(strings.TrimSpace(sb.String()), "\n")
	if len(lines) != 2+7 {
		t.Fatalf("got %d lines, want 9:\n%s", len(lines), sb.String())
	}
	if !strings.Contains(lines[2], "200µs") || !strings.Contains(lines[8], "100.00%") {
		t.Fatalf("rows do not run from 200µs to 100%% cumulative:\n%s", sb.String())
	}
}
