package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluent-kafka-go (librdkafka): an idempotent Producer per codec
// (acks=all, explicit partitions) and one Consumer with every partition
// assigned at offset 0. Consumer groups are not served yet, so the consumer
// never subscribes; librdkafka still insists on a group.id.
func TestConfluentProducesAndConsumes100kAcrossCodecs(t *testing.T) {
	runClientTest(t, clientTest{name: "confluent", produce: confluentProduce, consume: confluentConsume})
}

func confluentProduce(ctx context.Context, t *testing.T, addr, topic, codec string, recs []*plannedRecord, l *ledger) (err error) {
	logs := newRdkafkaLogs(t, "producer "+codec)
	defer logs.check(&err)
	p, err := kafka.NewProducer(logs.configure(&kafka.ConfigMap{
		"bootstrap.servers":  addr,
		"client.id":          "sluice-confluent-test-" + codec,
		"acks":               "all",
		"enable.idempotence": true,
		"compression.type":   codec,
	}))
	if err != nil {
		return fmt.Errorf("new producer: %w", err)
	}
	// Client-level errors (a broker connection lost, an idempotence
	// failure) arrive on Events, which Close closes. librdkafka recovers
	// from most by retrying, but a healthy broker causes none, so each one
	// fails the test; a fatal one also ends the producer at once.
	fatal := make(chan error, 1)
	var clientErrs []error
	eventsDone := make(chan struct{})
	defer func() {
		p.Close()
		<-eventsDone
		err = errors.Join(err, errors.Join(clientErrs...))
	}()
	go func() {
		defer close(eventsDone)
		for ev := range p.Events() {
			if e, ok := ev.(kafka.Error); ok {
				if len(clientErrs) < problemsShownMax {
					clientErrs = append(clientErrs, fmt.Errorf("producer error event: %w", e))
				}
				if e.IsFatal() {
					select {
					case fatal <- e:
					default:
					}
				}
			}
		}
	}()

	// The buffer holds every report, so librdkafka never waits on us.
	delivered := make(chan kafka.Event, len(recs))
	for _, r := range recs {
		m := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.Partition},
			Key:            r.Key, Value: r.Value, Timestamp: r.Timestamp, Opaque: r,
		}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(m, delivered); err != nil {
			return fmt.Errorf("produce record %d: %w", r.ID, err)
		}
	}
	for range recs {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for delivery reports: %w", ctx.Err())
		case err := <-fatal:
			return fmt.Errorf("fatal producer error: %w", err)
		case ev := <-delivered:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return fmt.Errorf("delivery channel carried %T (%v), want *kafka.Message", ev, ev)
			}
			r := m.Opaque.(*plannedRecord)
			if m.TopicPartition.Error != nil {
				l.ack(r, m.TopicPartition.Partition, -1, m.TopicPartition.Error)
				continue
			}
			l.ack(r, m.TopicPartition.Partition, int64(m.TopicPartition.Offset), nil)
		}
	}
	return nil
}

func confluentConsume(ctx context.Context, t *testing.T, addr, topic string, ends map[int32]int64) (got []consumedRecord, err error) {
	logs := newRdkafkaLogs(t, "consumer")
	defer logs.check(&err)
	c, err := kafka.NewConsumer(logs.configure(&kafka.ConfigMap{
		"bootstrap.servers":        addr,
		"client.id":                "sluice-confluent-test-consumer",
		"group.id":                 "sluice-assign-only", // required by the Go binding; never joined
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
	}))
	if err != nil {
		return nil, fmt.Errorf("new consumer: %w", err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for part := range ends {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: part, Offset: kafka.Offset(0)})
	}
	if err := c.Assign(tps); err != nil {
		return nil, fmt.Errorf("assign: %w", err)
	}
	pp := newPartitionProgress(ends)
	clientErrs := 0
	for !pp.done() {
		if cerr := ctx.Err(); cerr != nil {
			return got, errors.Join(err, fmt.Errorf("%w before every partition was read: %s", cerr, pp))
		}
		switch ev := c.Poll(100).(type) {
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return got, fmt.Errorf("partition %d: %w", ev.TopicPartition.Partition, ev.TopicPartition.Error)
			}
			r := consumedRecord{
				Partition: ev.TopicPartition.Partition, Offset: int64(ev.TopicPartition.Offset),
				Key: ev.Key, Value: ev.Value, Timestamp: ev.Timestamp,
			}
			if ev.TimestampType != kafka.TimestampCreateTime {
				return got, fmt.Errorf("partition %d offset %d: timestamp type %v, want CreateTime", r.Partition, r.Offset, ev.TimestampType)
			}
			for _, h := range ev.Headers {
				r.Headers = append(r.Headers, testHeader{Key: h.Key, Value: h.Value})
			}
			got = append(got, r)
			pp.record(r.Partition, r.Offset)
		case kafka.Error:
			// Retried by librdkafka, but a healthy broker causes none.
			if ev.IsFatal() {
				return got, fmt.Errorf("fatal consumer error: %w", ev)
			}
			if clientErrs++; clientErrs <= problemsShownMax {
				err = errors.Join(err, fmt.Errorf("consumer error event: %w", ev))
			}
		case nil:
		default:
			t.Logf("confluent consumer: event %T: %v", ev, ev)
		}
	}
	if clientErrs > problemsShownMax {
		err = errors.Join(err, fmt.Errorf("... %d consumer error events in all", clientErrs))
	}
	return got, err
}

// A consumer assigned to several partitions gets fetch responses in which
// some partitions have no records yet. librdkafka rejects the whole
// response if such a partition's record set is null rather than empty, so
// this checks that records on one partition are delivered while the others
// stay empty.
func TestConfluentConsumesOnePartitionWhileOthersAreEmpty(t *testing.T) {
	sa := startBroker(t, nil, Config{AutoCreateTopics: true, DefaultPartitions: clientTestPartitions})
	topic := "confluent-mostly-empty"
	createTestTopic(t, sa.Addr(), topic, clientTestPartitions)
	// Every record goes to the last partition, so that the empty ones
	// come first in each fetch response.
	plan := planRecords(100, []string{"none"}, 1, time.Now().Add(-time.Hour))
	for _, r := range plan {
		r.Partition = clientTestPartitions - 1
	}
	l := newLedger(plan)
	ctx, cancel := context.WithTimeout(context.Background(), clientTestTimeout)
	defer cancel()
	if err := confluentProduce(ctx, t, sa.Addr(), topic, "none", plan, l); err != nil {
		t.Fatalf("produce: %v", err)
	}
	l.requireAllAcked(t)
	ends := endOffsets(t, sa.Addr(), topic, clientTestPartitions)

	// A healthy run takes well under a second; 30s is only a bound.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := confluentConsume(ctx, t, sa.Addr(), topic, ends)
	if err != nil {
		t.Errorf("consumer assigned to partitions 0..%d, with records only on partition %d: %v", clientTestPartitions-1, clientTestPartitions-1, err)
	}
	verifyConsumed(t, plan, ends, got)
}

// rdkafkaLogs routes a librdkafka client's log to the test log, and turns
// error-level lines (protocol parse failures, for one) into a test failure:
// librdkafka often recovers from them by retrying, which would hide a
// broker bug behind a slower but passing test.
type rdkafkaLogs struct {
	t      *testing.T
	who    string
	events chan kafka.LogEvent
	done   chan struct{}
	mu     sync.Mutex
	errors []string
}

// rdkafkaErrorLevelMax is the least severe syslog level counted as an
// error (3, LOG_ERR).
const rdkafkaErrorLevelMax = 3

func newRdkafkaLogs(t *testing.T, who string) *rdkafkaLogs {
	l := &rdkafkaLogs{t: t, who: who, events: make(chan kafka.LogEvent, 1024), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ev := range l.events {
			l.t.Logf("librdkafka %s: level %d %s: %s", l.who, ev.Level, ev.Tag, ev.Message)
			if ev.Level <= rdkafkaErrorLevelMax {
				l.mu.Lock()
				l.errors = append(l.errors, ev.Tag+": "+ev.Message)
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *rdkafkaLogs) configure(cm *kafka.ConfigMap) *kafka.ConfigMap {
	(*cm)["go.logs.channel.enable"] = true
	(*cm)["go.logs.channel"] = l.events
	return cm
}

// check runs after the client is closed: it stops the drain and adds the
// error lines, if any, to *err.
func (l *rdkafkaLogs) check(err *error) {
	close(l.events)
	<-l.done
	if len(l.errors) == 0 {
		return
	}
	shown := l.errors[:min(len(l.errors), problemsShownMax)]
	logged := fmt.Errorf("librdkafka %s logged %d error(s), want none: %s", l.who, len(l.errors), strings.Join(shown, "; "))
	*err = errors.Join(*err, logged)
}
