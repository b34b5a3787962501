package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio"
)

// TestColdReadsFetchWholeObjectsOrSingleBatches: an agent with a cold cache
// reads each data object once when its cache can hold objects, and single
// batches with ranged GETs when it cannot (else every batch would cost a
// whole object). Either way every record comes back.
func TestColdReadsFetchWholeObjectsOrSingleBatches(t *testing.T) {
	const (
		topic      = "cold"
		partitions = 4
		records    = 2000
	)
	store := objectio.NewMem()
	writer := startBroker(t, store, Config{FlushWindow: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(writer.Addr()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	rs := make([]*kgo.Record, records)
	for i := range rs {
		rs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("record-%05d", i))}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	objects := writer.Agent.metrics.objectsWritten.Load()
	batches := writer.Agent.metrics.producedBatches.Load()
	if objects >= batches {
		t.Fatalf("setup: %d objects for %d batches; the two ways of reading would not differ", objects, batches)
	}

	for _, c := range []struct {
		name       string
		cacheBytes int64
		wantReads  int64
	}{
		{"whole objects", DefaultCacheBytes, objects},
		{"single batches", 1 << 20, batches},
	} {
		t.Run(c.name, func(t *testing.T) {
			reader := startBroker(t, store, Config{CacheBytes: c.cacheBytes})
			offsets := map[int32]kgo.Offset{}
			for p := range int32(partitions) {
				offsets[p] = kgo.NewOffset().AtStart()
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(reader.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			seen := map[string]bool{}
			for len(seen) < records && ctx.Err() == nil {
				cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
			}
			if len(seen) != records {
				t.Fatalf("read back %d of %d records", len(seen), records)
			}
			if reads := reader.Agent.metrics.storeReads.Load(); reads != c.wantReads {
				t.Fatalf("%d store reads for %d objects holding %d batches; want %d", reads, objects, batches, c.wantReads)
			}
		})
	}
}
