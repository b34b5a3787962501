package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/codec/codectest"
)

// BenchmarkProduce sends pre-encoded Produce requests (one batch of N
// records of 100 bytes each) pipelined on one connection, acks=all, through
// the whole write path: framing, CRC check, flush window, object PUT on the
// mem store, sequencer commit and log append, response. allocs/op must not
// grow with records: the broker never touches individual records.
func BenchmarkProduce(b *testing.B) {
	for _, records := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("records=%d", records), func(b *testing.B) {
			sa := startBroker(b, time.Millisecond)
			batch := codectest.Batch(codectest.BatchSpec{Records: records, ValueBytes: 100})
			frame := produceFrame("bench", batch)
			checkProduceResponse(b, sa.Addr(), frame) // creates the topic, checks the path

			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			pipeline(b, sa.Addr(), [][]byte{frame}, b.N)
			b.StopTimer()
			b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkProduceFranzGo measures what a user sees: franz-go, idempotent
// by default, producing 100-byte records into 8 partitions.
func BenchmarkProduceFranzGo(b *testing.B) {
	sa := startBroker(b, 5*time.Millisecond)
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("franz"),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	if err := cl.ProduceSync(ctx, kgo.SliceRecord([]byte("warm up"))).FirstErr(); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 100)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var produceErr error
	wg.Add(b.N)
	for i := 0; i < b.N; i++ {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				errOnce.Do(func() { produceErr = err })
			}
			wg.Done()
		})
	}
	wg.Wait()
	b.StopTimer()
	if produceErr != nil {
		b.Fatal(produceErr)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
