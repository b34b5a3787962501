package server

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/IBM/sarama"
)

// sarama ConsumerGroup members, once with the eager range strategy and once
// with the cooperative-sticky one. The handler marks each message after it
// is delivered; sarama autocommits the marks every groupTestCommitInterval
// and when it gives partitions up (a rebalance or the close).
func TestSaramaGroupSurvivesKilledMemberAndJoinWithoutReReadingCommitted(t *testing.T) {
	for _, strategy := range []struct {
		name     string
		strategy sarama.BalanceStrategy
	}{
		{"range", sarama.NewBalanceStrategyRange()},
		{"cooperative-sticky", sarama.NewBalanceStrategyCooperativeSticky()},
	} {
		t.Run(strategy.name, func(t *testing.T) {
			runGroupTest(t, groupClient{name: "sarama-" + strategy.name, join: saramaGroupJoin(strategy.strategy)})
		})
	}
}

type saramaMember struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   sync.WaitGroup
}

func saramaGroupJoin(strategy sarama.BalanceStrategy) func(run *groupRun, id string) (groupMember, error) {
	return func(run *groupRun, id string) (groupMember, error) { return saramaGroupMember(run, id, strategy) }
}

func saramaGroupMember(run *groupRun, id string, strategy sarama.BalanceStrategy) (groupMember, error) {
	cfg := saramaConfig()
	cfg.ClientID = id
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = true
	cfg.Consumer.Offsets.AutoCommit.Interval = groupTestCommitInterval
	cfg.Consumer.Group.Session.Timeout = groupTestSessionTimeout
	cfg.Consumer.Group.Heartbeat.Interval = groupTestHeartbeat
	cfg.Consumer.Group.Rebalance.Timeout = groupTestRebalanceTimeout
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{strategy}
	g, err := sarama.NewConsumerGroup([]string{run.addr}, run.group, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{group: g, cancel: cancel}
	m.done.Add(2)
	go func() {
		defer m.done.Done()
		for err := range g.Errors() {
			run.clientError(id, err)
		}
	}()
	go func() {
		defer m.done.Done()
		h := &saramaHandler{run: run, id: id, kill: cancel}
		// Consume returns at every rebalance; the loop rejoins.
		for ctx.Err() == nil {
			if err := g.Consume(ctx, []string{run.topic}, h); err != nil && ctx.Err() == nil {
				run.clientError(id, err)
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
			}
		}
	}()
	return m, nil
}

// saramaHandler delivers each claimed message, then marks it.
type saramaHandler struct {
	run  *groupRun
	id   string
	kill context.CancelFunc
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for {
		select {
		case <-sess.Context().Done():
			return nil
		case msg, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			if !h.run.deliver(h.id, msg.Partition, msg.Offset, msg.Key) {
				h.kill()
				return nil
			}
			sess.MarkMessage(msg, "")
		}
	}
}

func (m *saramaMember) leave(ctx context.Context) error {
	m.cancel()
	closed := make(chan error, 1)
	go func() { closed <- m.group.Close() }()
	select {
	case err := <-closed:
		m.done.Wait()
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *saramaMember) abandon() {
	m.cancel()
	m.group.Close()
	m.done.Wait()
}
