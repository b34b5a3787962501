package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
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

// BenchmarkProduceFranzGo measures what a user sees: one franz-go client,
// idempotent (its default), producing load records (the same ones `sluice
// bench` sends, from the same producer code) as fast as it can. One
// iteration is one record; p99-ms is its Produce-to-acknowledgement
// latency. The client runs in this process, so allocs/op are the client's
// and the broker's together.
func BenchmarkProduceFranzGo(b *testing.B) {
	for _, recordBytes := range []int{100, 1 << 10} {
		for _, parts := range e2ePartitions {
			b.Run(fmt.Sprintf("record=%s/partitions=%d", sizeName(recordBytes), parts), func(b *testing.B) {
				benchProduceFranzGo(b, recordBytes, parts)
			})
		}
	}
}

func benchProduceFranzGo(b *testing.B, recordBytes int, parts int32) {
	store := &objectio.Counting{Inner: objectio.NewMem()}
	sa := startBrokerOn(b, store, server.Config{FlushWindow: e2eFlushWindow, AutoCreateTopics: true, DefaultPartitions: parts})
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("franz"),
		kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0), kgo.MaxBufferedBytes(producerBufferBytes))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	warm := newProducer(cl, 0, recordBytes, newMeter(time.Now()), nil)
	warm.produce(ctx, time.Now()) // creates the topic, learns the partitions
	if err := cl.Flush(ctx); err != nil || warm.meter.err() != nil {
		b.Fatalf("warm-up record: %v %v", err, warm.meter.err())
	}

	m := newMeter(time.Now())
	p := newProducer(cl, 1, recordBytes, m, nil)
	putsBefore := store.Puts.Load()
	b.SetBytes(int64(recordBytes))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.produce(ctx, time.Now())
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	w := m.total()
	if w.errors.Load() > 0 || w.records.Load() != int64(b.N) {
		b.Fatalf("%d of %d records acknowledged, %d failed, first error: %v", w.records.Load(), b.N, w.errors.Load(), m.err())
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(w.hist.Quantile(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(store.Puts.Load()-putsBefore)/secs, "PUTs/s")
	b.ReportMetric(float64(b.N)/secs, "records/s")
}
