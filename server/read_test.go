package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// TestDamagedStoredBatchIsAStorageErrorNotData: bytes the store returns
// wrong are caught by their CRC on the way in, whether the agent reads the
// whole object or the single batch, and the fetch gets KAFKA_STORAGE_ERROR
// rather than the damaged records.
func TestDamagedStoredBatchIsAStorageErrorNotData(t *testing.T) {
	const topic = "damaged"
	store := objectio.NewMem()
	writer := startBroker(t, store, Config{FlushWindow: 20 * time.Millisecond, AutoCreateTopics: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := topicProducer(t, writer.Addr(), topic)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("one")}, &kgo.Record{Value: []byte("two")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	objects, err := objectio.ListAll(ctx, store, "data/")
	if err != nil || len(objects) == 0 {
		t.Fatalf("listing data objects: %d, %v", len(objects), err)
	}
	for _, o := range objects {
		b, err := store.Get(ctx, o.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		damaged := bytes.Clone(b)
		damaged[len(damaged)-1] ^= 0xff // the last record's bytes, under the CRC
		if err := store.Put(ctx, o.Key, damaged, objectio.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cacheBytes := range []int64{DefaultCacheBytes, 1 << 20} {
		reader := startBroker(t, store, Config{CacheBytes: cacheBytes})
		rc, err := kgo.NewClient(kgo.SeedBrokers(reader.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, 0, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.KafkaStorageError.Code || len(p.RecordBatches) != 0 {
			t.Errorf("cache of %d bytes: fetch of a damaged batch got error %d and %d bytes of records; want KAFKA_STORAGE_ERROR and none",
				cacheBytes, p.ErrorCode, len(p.RecordBatches))
		}
	}
}
