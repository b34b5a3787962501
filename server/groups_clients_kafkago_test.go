package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// segmentio/kafka-go Readers with a GroupID and the range balancer. Each
// message is fetched (FetchMessage, which commits nothing), delivered, and
// then passed to CommitMessages; with a CommitInterval the Reader commits
// those every interval and once more when a generation ends.
//
// The group changes membership only while the members are idle
// (idleRebalances), because the Reader cannot keep a partition's committed
// offset right when a rebalance moves it between live members under load.
// It keeps handing out messages fetched in the ended generation (see the
// comment in Reader.unsubscribe), and the offsets passed to CommitMessages
// after a generation's commit loop has stopped are committed by the next
// one, with the next generation's id, for partitions this member may no
// longer own (segmentio/kafka-go#1308, #1398). Any Kafka broker accepts
// such a commit, since the classic protocol does not check ownership, so
// the old owner's stale offset can land after the new owner's and move the
// group's offset back. Run under load, this test sees exactly that on most
// runs: a partition's committed offset ends below its high watermark, and
// records the old owner delivered are delivered and committed again by the
// new one. The franz-go, sarama and confluent members run the same checks
// with the rebalances under load.
func TestKafkaGoGroupSurvivesKilledMemberAndJoinWithoutReReadingCommitted(t *testing.T) {
	runGroupTest(t, groupClient{name: "kafka-go", join: kafkaGoGroupJoin, idleRebalances: true})
}

type kafkaGoMember struct {
	r      *kafka.Reader
	cancel context.CancelFunc
	done   chan struct{}
}

func kafkaGoGroupJoin(run *groupRun, id string) (groupMember, error) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{run.addr},
		GroupID:           run.group,
		Topic:             run.topic,
		Dialer:            &kafka.Dialer{ClientID: id, Timeout: 10 * time.Second},
		GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		SessionTimeout:    groupTestSessionTimeout,
		HeartbeatInterval: groupTestHeartbeat,
		RebalanceTimeout:  groupTestRebalanceTimeout,
		CommitInterval:    groupTestCommitInterval,
		StartOffset:       kafka.FirstOffset,
		// See kafkaGoReadPartition: the fetch in flight when a generation
		// ends or the Reader closes is waited for.
		MaxWait:     2 * time.Second,
		ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) { run.clientError(id, fmt.Errorf(format, args...)) }),
	})
	ctx, cancel := context.WithCancel(context.Background())
	m := &kafkaGoMember{r: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			msg, err := r.FetchMessage(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				run.clientError(id, err)
				return
			}
			if !run.deliver(id, int32(msg.Partition), msg.Offset, msg.Key) {
				return
			}
			if err := r.CommitMessages(ctx, msg); err != nil && ctx.Err() == nil {
				run.clientError(id, fmt.Errorf("commit partition %d offset %d: %w", msg.Partition, msg.Offset, err))
			}
		}
	}()
	return m, nil
}

func (m *kafkaGoMember) leave(ctx context.Context) error {
	m.cancel()
	<-m.done
	closed := make(chan error, 1)
	go func() { closed <- m.r.Close() }()
	select {
	case err := <-closed:
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *kafkaGoMember) abandon() {
	m.cancel()
	<-m.done
	m.r.Close()
}
