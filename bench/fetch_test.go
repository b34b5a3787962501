package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec/codectest"
)

// BenchmarkFetchFromCache fetches the same 1 MiB from offset 0 of a
// partition whose batches are in the segment cache (written through by the
// producer), pipelined on one connection. It measures the fetch hot path:
// index lookup, cache hit, writev of the cached slices.
func BenchmarkFetchFromCache(b *testing.B) {
	for _, records := range []int{10, 100} {
		b.Run(fmt.Sprintf("recordsPerBatch=%d", records), func(b *testing.B) {
			sa := startBroker(b, time.Millisecond)
			batch := codectest.Batch(codectest.BatchSpec{Records: records, ValueBytes: 100})
			frame := produceFrame("fetch", batch)
			checkProduceResponse(b, sa.Addr(), frame)
			batches := (1<<20)/len(batch) + 1
			pipeline(b, sa.Addr(), [][]byte{frame}, batches)

			fetch := kmsg.NewPtrFetchRequest()
			fetch.SetVersion(12)
			fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 0, 1, 1<<20
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = "fetch"
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.PartitionMaxBytes = 1 << 20
			ft.Partitions = []kmsg.FetchRequestTopicPartition{fp}
			fetch.Topics = []kmsg.FetchRequestTopic{ft}
			fframe := requestFrame(fetch, 2)

			b.ReportAllocs()
			b.ResetTimer()
			total := pipeline(b, sa.Addr(), [][]byte{fframe}, b.N)
			b.StopTimer()
			b.SetBytes(total / int64(b.N))
			if total/int64(b.N) < 1<<19 {
				b.Fatalf("fetch returned %d bytes per response, want about 1 MiB", total/int64(b.N))
			}
		})
	}
}
