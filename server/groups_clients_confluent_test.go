package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// confluent-kafka-go (librdkafka) members that Subscribe, once with the
// eager range assignor and once with the cooperative-sticky one. Offsets
// are stored (StoreMessage) only after a message is delivered, and
// librdkafka commits the stored offsets every groupTestCommitInterval and
// when partitions are revoked. The binding
// serves rebalances from Poll, on the member's own goroutine, so a
// partition is never revoked between a message's delivery and its store.
func TestConfluentGroupSurvivesKilledMemberAndJoinWithoutReReadingCommitted(t *testing.T) {
	for _, assignor := range []string{"range", "cooperative-sticky"} {
		t.Run(assignor, func(t *testing.T) {
			runGroupTest(t, groupClient{name: "confluent-" + assignor, join: confluentGroupJoin(assignor)})
		})
	}
}

type confluentMember struct {
	c      *kafka.Consumer
	logs   *rdkafkaLogs
	cancel context.CancelFunc
	done   chan struct{}
}

func confluentGroupJoin(assignor string) func(run *groupRun, id string) (groupMember, error) {
	return func(run *groupRun, id string) (groupMember, error) { return confluentGroupMember(run, id, assignor) }
}

func confluentGroupMember(run *groupRun, id, assignor string) (groupMember, error) {
	logs := newRdkafkaLogs(run.t, id)
	c, err := kafka.NewConsumer(logs.configure(&kafka.ConfigMap{
		"bootstrap.servers":             run.addr,
		"client.id":                     id,
		"group.id":                      run.group,
		"partition.assignment.strategy": assignor,
		"session.timeout.ms":            int(groupTestSessionTimeout.Milliseconds()),
		"heartbeat.interval.ms":         int(groupTestHeartbeat.Milliseconds()),
		"max.poll.interval.ms":          int(groupTestRebalanceTimeout.Milliseconds()),
		"auto.offset.reset":             "earliest",
		"enable.auto.commit":            true,
		"auto.commit.interval.ms":       int(groupTestCommitInterval.Milliseconds()),
		"enable.auto.offset.store":      false,
	}))
	if err != nil {
		logs.check(&err)
		return nil, fmt.Errorf("new consumer: %w", err)
	}
	if err := c.Subscribe(run.topic, nil); err != nil {
		c.Close()
		logs.check(&err)
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &confluentMember{c: c, logs: logs, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			switch ev := c.Poll(100).(type) {
			case *kafka.Message:
				if ev.TopicPartition.Error != nil {
					run.clientError(id, fmt.Errorf("partition %d: %w", ev.TopicPartition.Partition, ev.TopicPartition.Error))
					continue
				}
				if !run.deliver(id, ev.TopicPartition.Partition, int64(ev.TopicPartition.Offset), ev.Key) {
					return
				}
				if _, err := c.StoreMessage(ev); err != nil {
					run.clientError(id, fmt.Errorf("store offset of partition %d offset %d: %w", ev.TopicPartition.Partition, ev.TopicPartition.Offset, err))
				}
			case kafka.Error:
				run.clientError(id, fmt.Errorf("consumer error event: %w", ev))
			}
		}
	}()
	return m, nil
}

func (m *confluentMember) leave(ctx context.Context) (err error) {
	m.cancel()
	<-m.done
	// Close commits the stored offsets, revokes and leaves the group.
	closed := make(chan error, 1)
	go func() { closed <- m.c.Close() }()
	select {
	case err = <-closed:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.logs.check(&err)
	return err
}

func (m *confluentMember) abandon() {
	m.cancel()
	<-m.done
	// Its connections are refused, so Close neither commits nor leaves;
	// what librdkafka logs about that is expected of a dead member.
	err := m.c.Close()
	m.logs.check(&err)
}
