package server

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go group members, once with the eager range balancer and once with
// the cooperative-sticky one. Records are marked for autocommit after they
// are delivered (AutoCommitMarks), and BlockRebalanceOnPoll keeps a
// rebalance from revoking a partition between a poll and its marks, so a
// revoke commits exactly what was delivered.
func TestFranzGoGroupSurvivesKilledMemberAndJoinWithoutReReadingCommitted(t *testing.T) {
	for _, bal := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(bal.name, func(t *testing.T) {
			runGroupTest(t, groupClient{name: "franz-go-" + bal.name, join: franzGroupJoin(bal.balancer)})
		})
	}
}

type franzMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func franzGroupJoin(balancer kgo.GroupBalancer) func(run *groupRun, id string) (groupMember, error) {
	return func(run *groupRun, id string) (groupMember, error) {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(run.addr),
			kgo.ClientID(id),
			kgo.ConsumerGroup(run.group),
			kgo.ConsumeTopics(run.topic),
			kgo.Balancers(balancer),
			kgo.SessionTimeout(groupTestSessionTimeout),
			kgo.HeartbeatInterval(groupTestHeartbeat),
			kgo.RebalanceTimeout(groupTestRebalanceTimeout),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AutoCommitMarks(),
			kgo.AutoCommitInterval(groupTestCommitInterval),
			kgo.BlockRebalanceOnPoll(),
		)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &franzMember{cl: cl, cancel: cancel, done: make(chan struct{})}
		go m.consume(ctx, run, id)
		return m, nil
	}
}

func (m *franzMember) consume(ctx context.Context, run *groupRun, id string) {
	defer close(m.done)
	for {
		fs := m.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			m.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			run.clientError(id, err)
		})
		alive := true
		fs.EachRecord(func(r *kgo.Record) {
			if alive && run.deliver(id, r.Partition, r.Offset, r.Key) {
				m.cl.MarkCommitRecords(r)
			} else {
				alive = false
			}
		})
		m.cl.AllowRebalance()
		if !alive {
			return
		}
	}
}

func (m *franzMember) leave(ctx context.Context) error {
	m.cancel()
	<-m.done
	// Leaving revokes every partition, and the default revoke commits the
	// marks; the leave itself is bounded by ctx.
	err := m.cl.LeaveGroupContext(ctx)
	m.cl.Close()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

func (m *franzMember) abandon() {
	m.cancel()
	<-m.done
	// The proxy refuses every connection of this member, so the leave
	// never reaches the broker; a canceled context keeps Close from
	// waiting on it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.cl.LeaveGroupContext(ctx)
	m.cl.Close()
}
