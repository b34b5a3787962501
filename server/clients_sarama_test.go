package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// IBM/sarama: a SyncProducer per codec (acks=all, successes returned, the
// manual partitioner so the plan decides) and one PartitionConsumer per
// partition. Version 2.8 makes sarama use RecordBatch v2 and Produce v3+.
func TestSaramaProducesAndConsumes100kAcrossCodecs(t *testing.T) {
	runClientTest(t, clientTest{name: "sarama", produce: saramaProduce, consume: saramaConsume})
}

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sluice-sarama-test"
	return cfg
}

// saramaSendChunk is how many messages one SendMessages call carries: the
// sync producer batches what it has in flight, and one call per record
// would make the test measure round trips instead of the broker.
const saramaSendChunk = 2000

func saramaProduce(ctx context.Context, t *testing.T, addr, topic, codec string, recs []*plannedRecord, l *ledger) error {
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = saramaCodecs[codec]
	p, err := sarama.NewSyncProducer([]string{addr}, cfg)
	if err != nil {
		return fmt.Errorf("new sync producer: %w", err)
	}
	defer p.Close()
	for start := 0; start < len(recs); start += saramaSendChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := recs[start:min(start+saramaSendChunk, len(recs))]
		msgs := make([]*sarama.ProducerMessage, len(chunk))
		for i, r := range chunk {
			m := &sarama.ProducerMessage{
				Topic: topic, Partition: r.Partition,
				Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value),
				Timestamp: r.Timestamp, Metadata: r,
			}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
			}
			msgs[i] = m
		}
		err := p.SendMessages(msgs)
		failed := map[*sarama.ProducerMessage]error{}
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) {
			for _, pe := range perrs {
				failed[pe.Msg] = pe.Err
			}
		} else if err != nil {
			return fmt.Errorf("send messages: %w", err)
		}
		for i, m := range msgs {
			if ferr, bad := failed[m]; bad {
				l.ack(chunk[i], m.Partition, -1, ferr)
				continue
			}
			l.ack(chunk[i], m.Partition, m.Offset, nil)
		}
	}
	return nil
}

func saramaConsume(ctx context.Context, t *testing.T, addr, topic string, ends map[int32]int64) ([]consumedRecord, error) {
	cfg := saramaConfig()
	cfg.Consumer.Return.Errors = true
	c, err := sarama.NewConsumer([]string{addr}, cfg)
	if err != nil {
		return nil, fmt.Errorf("new consumer: %w", err)
	}
	defer c.Close()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []consumedRecord
		errs []error
	)
	for part, end := range ends {
		pc, err := c.ConsumePartition(topic, part, 0)
		if err != nil {
			return nil, fmt.Errorf("consume partition %d: %w", part, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pc.Close()
			recs, err := saramaReadPartition(ctx, pc, part, end)
			mu.Lock()
			defer mu.Unlock()
			got = append(got, recs...)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return got, errors.Join(errs...)
}

// saramaReadPartition reads one partition up to end. Sarama keeps
// consuming after it reports an error, but a healthy broker causes none, so
// the first one ends the read with its cause.
func saramaReadPartition(ctx context.Context, pc sarama.PartitionConsumer, part int32, end int64) ([]consumedRecord, error) {
	var got []consumedRecord
	next := int64(0)
	for next < end {
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("partition %d: %w at offset %d of %d", part, ctx.Err(), next, end)
		case cerr := <-pc.Errors():
			return got, fmt.Errorf("partition %d at offset %d: %w", part, next, cerr)
		case m := <-pc.Messages():
			c := consumedRecord{Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp}
			for _, h := range m.Headers {
				c.Headers = append(c.Headers, testHeader{Key: string(h.Key), Value: h.Value})
			}
			got = append(got, c)
			next = max(next, m.Offset+1)
		}
	}
	return got, nil
}
