package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// segmentio/kafka-go: a Writer per codec (acks=all, a balancer that sends
// each record where the plan says, acknowledgements with offsets through
// Completion) and a Reader per partition, without a consumer group.
func TestKafkaGoProducesAndConsumes100kAcrossCodecs(t *testing.T) {
	runClientTest(t, clientTest{name: "kafka-go", produce: kafkaGoProduce, consume: kafkaGoConsume})
}

var kafkaGoCodecs = map[string]kafka.Compression{
	"none":   0,
	"gzip":   kafka.Gzip,
	"snappy": kafka.Snappy,
	"lz4":    kafka.Lz4,
	"zstd":   kafka.Zstd,
}

func kafkaGoProduce(ctx context.Context, t *testing.T, addr, topic, codec string, recs []*plannedRecord, l *ledger) (err error) {
	byID := map[int]*plannedRecord{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	planned := func(m kafka.Message) *plannedRecord {
		id, ok := recordID(m.Key)
		if !ok || byID[id] == nil {
			panic(fmt.Sprintf("kafka-go writer handed back a message the test did not write: key %q", m.Key))
		}
		return byID[id]
	}
	var logged kafkaGoErrorLog
	defer func() {
		if lerr := logged.err(); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}()
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(planned(m).Partition) }),
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkaGoCodecs[codec],
		Completion: func(msgs []kafka.Message, err error) {
			for _, m := range msgs {
				off := m.Offset
				if err != nil {
					off = -1
				}
				l.ack(planned(m), int32(m.Partition), off, err)
			}
		},
		ErrorLogger: &logged,
	}
	defer w.Close()
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp}
		for _, h := range r.Headers {
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
	}
	// WriteMessages blocks until every message is acknowledged; the
	// Completion callback has run for each of them by then.
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) {
			return fmt.Errorf("%d of %d messages failed, e.g. %w", werrs.Count(), len(msgs), firstError(werrs))
		}
		return err
	}
	return nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func kafkaGoConsume(ctx context.Context, t *testing.T, addr, topic string, ends map[int32]int64) ([]consumedRecord, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		got  []consumedRecord
		errs []error
	)
	for part, end := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs, err := kafkaGoReadPartition(ctx, addr, topic, part, end)
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

// kafkaGoReadPartition reads one partition from offset 0 up to end with a
// group-less Reader.
func kafkaGoReadPartition(ctx context.Context, addr, topic string, part int32, end int64) (got []consumedRecord, err error) {
	// The Reader retries failed fetches and only logs why, which would
	// hide a broker that answers with something it cannot parse; against
	// a healthy broker it logs no error at all.
	var logged kafkaGoErrorLog
	defer func() {
		if lerr := logged.err(); lerr != nil {
			err = errors.Join(err, fmt.Errorf("partition %d: %w", part, lerr))
		}
	}()
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers: []string{addr}, Topic: topic, Partition: int(part),
		// Close waits for the fetch in flight, which after the last
		// record is a long poll: with the default MaxWait (10s) the
		// broker is asked to wait 9s, which would add 9s to the test
		// whatever the broker does. kafka-go gives the broker MaxWait
		// less 1s and gives up on the response at MaxWait (below 1s it
		// leaves only a quarter as slack, too little under -race), so
		// 2s asks for a 1s long poll with 1s to spare.
		MaxWait:     2 * time.Second,
		ErrorLogger: &logged,
	})
	defer func() {
		// Close cancels the Reader's own background requests (its lag
		// reads), which it logs as "context canceled": that is the
		// client shutting down, not something the broker said.
		logged.stop()
		r.Close()
	}()
	if err := r.SetOffset(0); err != nil {
		return nil, fmt.Errorf("partition %d: set offset 0: %w", part, err)
	}
	next := int64(0)
	for next < end {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return got, fmt.Errorf("partition %d at offset %d of %d: %w", part, next, end, err)
		}
		c := consumedRecord{Partition: int32(m.Partition), Offset: m.Offset, Key: m.Key, Value: m.Value, Timestamp: m.Time}
		for _, h := range m.Headers {
			c.Headers = append(c.Headers, testHeader{Key: h.Key, Value: h.Value})
		}
		got = append(got, c)
		next = max(next, m.Offset+1)
	}
	return got, nil
}

// kafkaGoErrorLog collects what a kafka-go Reader or Writer logs as errors,
// until stop is called.
type kafkaGoErrorLog struct {
	mu      sync.Mutex
	lines   []string
	stopped bool
}

func (l *kafkaGoErrorLog) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.stopped {
		l.lines = append(l.lines, fmt.Sprintf(format, args...))
	}
}

// stop ignores whatever is logged from now on: call it just before closing
// the client.
func (l *kafkaGoErrorLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
}

func (l *kafkaGoErrorLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return nil
	}
	shown := l.lines[:min(len(l.lines), problemsShownMax)]
	return fmt.Errorf("kafka-go logged %d error(s), want none: %s", len(l.lines), strings.Join(shown, "; "))
}
