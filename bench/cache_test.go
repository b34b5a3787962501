package bench

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sluicedb/sluice/cache"
)

// The segment cache's three paths: a fetch that hits (Acquire, Release),
// write-through (Put),
// and a miss that loads (Load, with the store read replaced by returning
// the bytes). Named by batch size, the unit the cache holds.
var cacheBatchBytes = []int{1 << 10, 16 << 10, 256 << 10}

// cacheBenchBytes is the cache's size in these benchmarks: large enough
// for the hit benchmark's working set, small enough that the others evict.
const cacheBenchBytes = 64 << 20

// cacheObjects is how many data object names the benchmarks cycle through.
const cacheObjects = 4096

func cacheObjectNames() []string {
	names := make([]string, cacheObjects)
	for i := range names {
		names[i] = "data/agent/" + strconv.Itoa(i)
	}
	return names
}

func newBenchCache(b *testing.B) *cache.Cache {
	c, err := cache.New(cacheBenchBytes)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// BenchmarkCacheGet: fetches that hit, from both cores at once, over a
// working set of half the cache: an Acquire and a Release of values that
// count their holders, as the agent's written objects do. hit-% says how
// many hit: a benchmark of misses would flatter.
func BenchmarkCacheGet(b *testing.B) {
	for _, size := range cacheBatchBytes {
		b.Run("batch="+sizeName(size), func(b *testing.B) {
			c := newBenchCache(b)
			value := make([]byte, size)
			names := cacheObjectNames()
			keys := min(cacheBenchBytes/2/size, cacheObjects)
			for i := range keys {
				c.Put(cache.Key(names[i], 0), value, func([]byte) {})
			}
			var hits, next atomic.Int64
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1)) * 7919 // goroutines start apart
				var mine int64
				for pb.Next() {
					if v, ok := c.Acquire(cache.Key(names[i%keys], 0)); ok {
						v.Release()
						mine++
					}
					i++
				}
				hits.Add(mine)
			})
			b.StopTimer()
			b.ReportMetric(100*float64(hits.Load())/float64(b.N), "hit-%")
		})
	}
}

// BenchmarkCacheFlush: one iteration is a Put for each partition's batch
// (the agent puts one whole object per flush; this is the per-batch cost).
func BenchmarkCacheFlush(b *testing.B) {
	for _, size := range cacheBatchBytes {
		for _, parts := range e2ePartitions {
			b.Run(fmt.Sprintf("batch=%s/partitions=%d", sizeName(size), parts), func(b *testing.B) {
				c := newBenchCache(b)
				value := make([]byte, size)
				names := cacheObjectNames()
				b.SetBytes(int64(size) * int64(parts))
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					object := names[i%cacheObjects]
					for p := range int64(parts) {
						c.Put(cache.Key(object, int64(i)*int64(parts)*int64(size)+p*int64(size)), value, nil)
					}
				}
			})
		}
	}
}

// BenchmarkCacheLoadMiss: one iteration is a fetch of a batch that is not
// cached: the single-flight Load, the (free) load, and the Set and Wait
// that make it visible to the next fetch.
func BenchmarkCacheLoadMiss(b *testing.B) {
	for _, size := range cacheBatchBytes {
		b.Run("batch="+sizeName(size), func(b *testing.B) {
			c := newBenchCache(b)
			value := make([]byte, size)
			names := cacheObjectNames()
			load := func() ([]byte, error) { return value, nil }
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := c.Load(cache.Key(names[i%cacheObjects], int64(i)), load); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
