package server

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go (kgo) with its defaults: idempotent writes, acks=all, and its own
// batching. Only the partitioner (manual, so the plan decides) and the
// compression codec are set.
func TestFranzGoProducesAndConsumes100kAcrossCodecs(t *testing.T) {
	runClientTest(t, clientTest{name: "franz-go", produce: franzProduce, consume: franzConsume})
}

var franzCodecs = map[string]kgo.CompressionCodec{
	"none":   kgo.NoCompression(),
	"gzip":   kgo.GzipCompression(),
	"snappy": kgo.SnappyCompression(),
	"lz4":    kgo.Lz4Compression(),
	"zstd":   kgo.ZstdCompression(),
}

func franzProduce(ctx context.Context, t *testing.T, addr, topic, codec string, recs []*plannedRecord, l *ledger) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(franzCodecs[codec]),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var wg sync.WaitGroup
	for _, r := range recs {
		kr := &kgo.Record{
			Topic: topic, Partition: r.Partition,
			Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		wg.Add(1)
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			defer wg.Done()
			l.ack(r, kr.Partition, kr.Offset, err)
		})
	}
	wg.Wait()
	return ctx.Err()
}

func franzConsume(ctx context.Context, t *testing.T, addr, topic string, ends map[int32]int64) ([]consumedRecord, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pp := newPartitionProgress(ends)
	var got []consumedRecord
	for !pp.done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("%w before every partition was read: %s", ctx.Err(), pp)
		}
		for _, fe := range fs.Errors() {
			return got, fmt.Errorf("fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			c := consumedRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
			for _, h := range r.Headers {
				c.Headers = append(c.Headers, testHeader{Key: h.Key, Value: h.Value})
			}
			got = append(got, c)
			pp.record(r.Partition, r.Offset)
		})
	}
	return got, nil
}

// A fetch answered with many batches at once must reach the client whole.
// One record on each of 1100 partitions makes a single fetch response of
// more than 1024 slices when batches are written by reference (writev takes
// at most IOV_MAX = 1024 per call).
func TestFranzGoFetchesOneRecordFromEachOf1100Partitions(t *testing.T) {
	const partitions = 1100
	sa := startBroker(t, nil, Config{AutoCreateTopics: true, DefaultPartitions: 1})
	topic := "franz-go-wide"
	createTestTopic(t, sa.Addr(), topic, partitions)
	plan := planRecords(partitions, []string{"none"}, partitions, time.Now().Add(-time.Hour))
	l := newLedger(plan)
	ctx, cancel := context.WithTimeout(context.Background(), clientTestTimeout)
	defer cancel()
	if err := franzProduce(ctx, t, sa.Addr(), topic, "none", plan, l); err != nil {
		t.Fatalf("produce one record to each of %d partitions: %v", partitions, err)
	}
	l.requireAllAcked(t)
	ends := endOffsets(t, sa.Addr(), topic, partitions)

	// A healthy run takes about a second; 30s is only a bound.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := franzConsume(ctx, t, sa.Addr(), topic, ends)
	if err != nil {
		t.Errorf("consumer of %d partitions: %v", partitions, err)
	}
	verifyConsumed(t, plan, ends, got)
}
