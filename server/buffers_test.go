package server

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio"
)

// recordValue is record i's value: long enough to fill objects quickly, and
// different for every i, so a consumer served bytes from a buffer that was
// reused for a later object would see the wrong value (or a bad CRC).
func recordValue(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("record-%07d;", i)), 20)
}

// TestRecycledFlushBuffersNeverReachAConsumer: on a store that does not keep
// the bytes it is given, an agent reuses a flush buffer once its object has
// left the cache. With a cache of a few objects, consumers tailing the
// producer read objects that are being evicted and reused; every record
// must still come back intact.
func TestRecycledFlushBuffersNeverReachAConsumer(t *testing.T) {
	const (
		topic      = "recycled"
		partitions = 4
		records    = 30000
		consumers  = 2
	)
	store, err := objectio.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sa := startBroker(t, store, Config{FlushWindow: 200 * time.Millisecond, FlushBytes: 128 << 10, CacheBytes: 1 << 20})
	// Zero every buffer as it comes back: a response still being written
	// from it would carry zeros, which fail the consumer's CRC check.
	sa.Agent.buffers.poison.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, consumers+1)
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offsets := map[int32]kgo.Offset{}
			for p := range int32(partitions) {
				offsets[p] = kgo.NewOffset().AtStart()
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
				kgo.FetchMaxWait(50*time.Millisecond))
			if err != nil {
				errs <- err
				return
			}
			defer cl.Close()
			seen := 0
			for seen < records && ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				for _, e := range fs.Errors() {
					if e.Err != ctx.Err() {
						errs <- fmt.Errorf("consumer: partition %d: %w", e.Partition, e.Err)
						return
					}
				}
				var bad error
				fs.EachRecord(func(r *kgo.Record) {
					var i int
					if _, err := fmt.Sscanf(string(r.Key), "%d", &i); err != nil || !bytes.Equal(r.Value, recordValue(i)) {
						bad = fmt.Errorf("record at %d/%d has key %q and a value that is not its own", r.Partition, r.Offset, r.Key)
					}
					seen++
				})
				if bad != nil {
					errs <- bad
					return
				}
			}
			if seen != records {
				errs <- fmt.Errorf("consumer read %d of %d records", seen, records)
			}
		}()
	}

	// Batches well under --flush-bytes, so that objects fill up to it and
	// their buffers have the size the agent recycles. Uncompressed, so that
	// the objects fill by size, not by the window, however slow the machine
	// (compressed, these values made ~30 objects of a few KiB and the cache
	// evicted almost none of them).
	producer, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	for i := range records {
		producer.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: recordValue(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errs <- fmt.Errorf("produce: %w", err):
				default:
				}
			}
		})
	}
	if err := producer.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := sa.Agent.metrics.buffersReused.Load(); n == 0 {
		t.Errorf("no flush buffer was reused over %d objects", sa.Agent.metrics.objectsWritten.Load())
	}
}

// TestSmallObjectsReadBackHoldLittleMemory: objects from a light load's
// windows, read back cold by a consumer, are cached in memory of their own
// size, not each in a flush buffer. The cache counts what its values hold,
// so in whole buffers a few of them would fill it, and a fetch over many
// would hold a buffer for each (in the chaos run, fetches over thousands of
// small objects held gigabytes and timed out).
func TestSmallObjectsReadBackHoldLittleMemory(t *testing.T) {
	const topic, records = "light", 40
	store, err := objectio.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writer := startBroker(t, store, Config{FlushWindow: 5 * time.Millisecond, AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := topicProducer(t, writer.Addr(), topic)
	for i := range records { // one at a time: an object each
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: recordValue(i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	objects := writer.Agent.metrics.objectsWritten.Load()

	reader := startBroker(t, store, Config{})
	cons, err := kgo.NewClient(kgo.SeedBrokers(reader.Addr()), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for seen := 0; seen < records && ctx.Err() == nil; {
		seen += cons.PollFetches(ctx).NumRecords()
	}
	if reads := reader.Agent.metrics.storeReads.Load(); reads < objects/2 {
		t.Fatalf("setup: %d store reads for %d objects; the reader did not read them cold", reads, objects)
	}
	if held, most := reader.Agent.cache.Bytes(), objects*64<<10; held > most {
		t.Errorf("%d small objects read back hold %d KiB in the cache; want at most %d KiB (a flush buffer is %d KiB)",
			objects, held>>10, most>>10, reader.Agent.cfg.FlushBytes>>10)
	}
}

// TestSmallWindowsDoNotTakeLargeBuffers: a flush buffer kept from a busy
// period is not handed to a window that asks for a small one.
func TestSmallWindowsDoNotTakeLargeBuffers(t *testing.T) {
	var reused atomic.Int64
	p := &flushBuffers{size: 8 << 20, reused: &reused}
	p.put(make([]byte, 0, 8<<20))
	if b := p.get(64 << 10); cap(b) != 64<<10 {
		t.Errorf("a window asking for 64 KiB got a buffer of %d KiB", cap(b)>>10)
	}
	if b := p.get(8 << 20); cap(b) != 8<<20 || reused.Load() != 1 {
		t.Errorf("a window asking for 8 MiB got a buffer of %d KiB, %d reused; want the kept one", cap(b)>>10, reused.Load())
	}
}
