package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/objectio"
)

// Agents forward every group request to the sequencer's one coordinator, so
// a group whose members reach it through different agents is one group.
// Two agents share one sequencer here, as `sluice agent`s behind a load
// balancer will. Three franz-go members join through different agents, and
// then: every member reports the same generation; both agents describe the
// same members with the same assignments, which are disjoint and cover
// every partition; each member reads exactly its partitions' records; a
// member id and generation handed out through one agent are valid through
// the other; and commits made through one agent are visible through the
// other.
func TestGroupMembersOnTwoAgentsFormOneGroupAndSeeEachOthersCommits(t *testing.T) {
	const (
		topic      = "two-agents"
		group      = "two-agents-group"
		partitions = 16
		perPart    = 100
	)
	store := objectio.NewMem()
	sa := startBroker(t, store, Config{GroupInitialRebalanceDelay: groupTestInitialDelay})
	agents := []string{sa.Addr(), startSecondAgent(t, sa, store)}
	createTestTopic(t, agents[0], topic, partitions)
	admins := []*kadm.Client{newGroupAdmin(t, agents[0]), newGroupAdmin(t, agents[1])}

	// Member i connects to agent agentOf[i].
	agentOf := []int{0, 1, 0}
	members := make([]*agentMember, len(agentOf))
	for i, a := range agentOf {
		m, err := startAgentMember(fmt.Sprintf("agents-m%d", i+1), agents[a], topic, group)
		if err != nil {
			t.Fatalf("start member %d on agent %d: %v", i+1, a+1, err)
		}
		defer m.close()
		members[i] = m
	}

	// One generation, one membership, one assignment, whichever agent is
	// asked.
	var owner map[int32]*agentMember
	waitFor(t, groupTestPhaseTimeout, "one stable generation seen alike through both agents", func() (bool, string) {
		var problems []string
		owner, problems = checkOneGroup(admins, group, topic, partitions, members)
		return len(problems) == 0, strings.Join(problems, "; ")
	})
	memberID, generation := members[1].cl.GroupMetadata()
	t.Logf("generation %d: %s", generation, describeGroup(admins[1], group))

	// Each member reads exactly the records of its own partitions.
	plan := planRecords(partitions*perPart, []string{"none"}, partitions, time.Now().Add(-time.Hour))
	l := newLedger(plan)
	ctx, cancel := context.WithTimeout(context.Background(), groupTestPhaseTimeout)
	defer cancel()
	if err := franzProduce(ctx, t, agents[1], topic, "none", plan, l); err != nil {
		t.Fatalf("produce: %v", err)
	}
	l.requireAllAcked(t)
	waitFor(t, groupTestPhaseTimeout, "every record to be consumed", func() (bool, string) {
		n := 0
		for _, m := range members {
			n += m.deliveredCount()
		}
		return n >= len(plan), fmt.Sprintf("%d of %d records consumed", n, len(plan))
	})
	var p problems
	for _, m := range members {
		for _, d := range m.deliveries() {
			if owner[d.Partition] != m {
				p.add("wrong member", fmt.Sprintf("%s read partition %d offset %d, which is assigned to %s", m.id, d.Partition, d.Offset, owner[d.Partition].id))
			}
		}
	}
	var all []consumedRecord
	for _, m := range members {
		all = append(all, m.deliveries()...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Partition < all[j].Partition })
	for _, problem := range checkConsumed(plan, endOffsets(t, agents[0], topic, partitions), all).byKind {
		for _, s := range problem {
			p.add("consumed", s)
		}
	}
	p.fatal(t, "consuming through two agents")
	if id, gen := members[1].cl.GroupMetadata(); id != memberID || gen != generation {
		t.Fatalf("member 2 moved from %s in generation %d to %s in generation %d while consuming: the group rebalanced", memberID, generation, id, gen)
	}

	// A member id and generation from agent 2 are valid through agent 1,
	// and the generation before or after is not.
	raw, err := kgo.NewClient(kgo.SeedBrokers(agents[0]), kgo.ClientID("admin"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, tc := range []struct {
		generation int32
		want       error
	}{{generation, nil}, {generation - 1, kerr.IllegalGeneration}, {generation + 1, kerr.IllegalGeneration}} {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = group, memberID, tc.generation
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatalf("heartbeat through agent 1: %v", err)
		}
		if got := kerr.ErrorForCode(resp.ErrorCode); got != tc.want {
			t.Errorf("heartbeat through agent 1 for member %s (joined through agent 2) in generation %d: got %v, want %v (generation is %d)",
				memberID, tc.generation, got, tc.want, generation)
		}
	}

	// Commits through one agent are visible through the other: first the
	// member on agent 2 commits its partitions, then those on agent 1.
	want := map[int32]int64{}
	for _, step := range []struct{ via, readBack int }{{1, 0}, {0, 1}} {
		for i, m := range members {
			if agentOf[i] != step.via {
				continue
			}
			offsets := map[int32]int64{}
			for part, o := range owner {
				if o == m {
					// Different per partition, so a commit cannot
					// pass for another partition's.
					offsets[part] = perPart - int64(part)
				}
			}
			if err := m.commit(ctx, offsets); err != nil {
				t.Fatalf("%s commits through agent %d: %v", m.id, step.via+1, err)
			}
			for part, off := range offsets {
				want[part] = off
			}
		}
		got := fetchCommitted(t, admins[step.readBack], group, topic)
		if !maps.Equal(got, want) {
			t.Fatalf("after commits through agent %d, agent %d reports committed offsets %v, want %v", step.via+1, step.readBack+1, got, want)
		}
	}
	if a, b := fetchCommitted(t, admins[0], group, topic), fetchCommitted(t, admins[1], group, topic); !maps.Equal(a, b) || len(a) != partitions {
		t.Fatalf("committed offsets of all %d partitions: agent 1 reports %v, agent 2 reports %v", partitions, a, b)
	}

	// Leaving through either agent empties the one group.
	for _, m := range members {
		m.close()
	}
	for i, admin := range admins {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		described, err := admin.DescribeGroups(ctx, group)
		cancel()
		if err != nil {
			t.Fatalf("describe through agent %d: %v", i+1, err)
		}
		if g := described[group]; g.State != "Empty" || len(g.Members) != 0 {
			t.Errorf("after every member left, agent %d describes the group as %s with %d members, want Empty with none", i+1, g.State, len(g.Members))
		}
	}
}

// startSecondAgent starts another agent and listener on sa's sequencer and
// store, and returns its address.
func startSecondAgent(t *testing.T, sa *Standalone, store objectio.Store) string {
	t.Helper()
	addr, err := freePort("127.0.0.1:0")
	if err != nil {
		t.Fatalf("second agent: %v", err)
	}
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	a, err := NewAgent(Config{
		AgentID: "agent-2", AdvertiseHost: host, AdvertisePort: int32(port),
		FlushWindow: 5 * time.Millisecond, OtherAgents: true,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, sa.Node, store)
	if err != nil {
		t.Fatalf("second agent: %v", err)
	}
	s, err := Serve(a, addr)
	if err != nil {
		t.Fatalf("second agent listener: %v", err)
	}
	// Registered after startBroker's cleanup, so it runs first, while the
	// sequencer is still up.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.Close(ctx)
		_ = s.Close(ctx)
	})
	return s.Addr()
}

// checkOneGroup compares what the members report with what each agent
// describes, and returns the partitions' owners and any disagreement.
func checkOneGroup(admins []*kadm.Client, group, topic string, partitions int32, members []*agentMember) (map[int32]*agentMember, []string) {
	var problems []string
	byID := map[string]*agentMember{}
	generations := map[int32][]string{}
	for _, m := range members {
		id, gen := m.cl.GroupMetadata()
		if id == "" {
			problems = append(problems, m.id+" has no member id yet")
			continue
		}
		byID[id] = m
		generations[gen] = append(generations[gen], m.id)
	}
	if len(generations) != 1 {
		problems = append(problems, fmt.Sprintf("members report generations %v", generations))
	}
	var views []string
	owner := map[int32]*agentMember{}
	for i, admin := range admins {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		described, err := admin.DescribeGroups(ctx, group)
		cancel()
		if err != nil {
			return nil, append(problems, fmt.Sprintf("describe through agent %d: %v", i+1, err))
		}
		g := described[group]
		if g.State != "Stable" || len(g.Members) != len(members) {
			problems = append(problems, fmt.Sprintf("agent %d: state %s with %d members", i+1, g.State, len(g.Members)))
			continue
		}
		var view []string
		for _, dm := range g.Members {
			m := byID[dm.MemberID]
			if m == nil {
				problems = append(problems, fmt.Sprintf("agent %d describes member %s, which no member is", i+1, dm.MemberID))
				continue
			}
			ca, _ := dm.Assigned.AsConsumer()
			var assigned []int32
			for _, at := range ca.Topics {
				if at.Topic == topic {
					assigned = append(assigned, at.Partitions...)
				}
			}
			slices.Sort(assigned)
			if own := m.assigned(); !slices.Equal(own, assigned) {
				problems = append(problems, fmt.Sprintf("agent %d: %s is assigned %v, the member itself has %v", i+1, m.id, assigned, own))
			}
			for _, part := range assigned {
				if prev := owner[part]; prev != nil && prev != m {
					problems = append(problems, fmt.Sprintf("agent %d: partition %d is assigned to both %s and %s", i+1, part, prev.id, m.id))
				}
				owner[part] = m
			}
			view = append(view, fmt.Sprintf("%s=%v", dm.MemberID, assigned))
		}
		sort.Strings(view)
		views = append(views, strings.Join(view, " "))
	}
	if len(views) == len(admins) && views[0] != views[1] {
		problems = append(problems, fmt.Sprintf("agent 1 describes %s, agent 2 describes %s", views[0], views[1]))
	}
	if len(owner) != int(partitions) {
		problems = append(problems, fmt.Sprintf("%d of %d partitions are assigned", len(owner), partitions))
	}
	return owner, problems
}

// agentMember is a franz-go group member that records what it reads and
// commits only when told to.
type agentMember struct {
	id     string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	closed sync.Once

	mu   sync.Mutex
	own  map[int32]bool
	read []consumedRecord
}

func startAgentMember(id, addr, topic, group string) (*agentMember, error) {
	m := &agentMember{id: id, own: map[int32]bool{}, done: make(chan struct{})}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(id),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(groupTestSessionTimeout),
		kgo.HeartbeatInterval(groupTestHeartbeat),
		kgo.RebalanceTimeout(groupTestRebalanceTimeout),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range assigned[topic] {
				m.own[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range revoked[topic] {
				delete(m.own, p)
			}
		}),
	)
	if err != nil {
		return nil, err
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.read = append(m.read, consumedRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
					Headers: franzHeaders(r)})
			})
		}
	}()
	return m, nil
}

func franzHeaders(r *kgo.Record) []testHeader {
	var hs []testHeader
	for _, h := range r.Headers {
		hs = append(hs, testHeader{Key: h.Key, Value: h.Value})
	}
	return hs
}

// assigned is the member's own view of its partitions, sorted.
func (m *agentMember) assigned() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int32, 0, len(m.own))
	for p := range m.own {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (m *agentMember) deliveredCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.read)
}

func (m *agentMember) deliveries() []consumedRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.read)
}

// commit commits offsets of the member's topic as a member of its current
// generation, and fails on any partition's error.
func (m *agentMember) commit(ctx context.Context, offsets map[int32]int64) error {
	topic := m.cl.GetConsumeTopics()[0]
	req := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for p, o := range offsets {
		req[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	var err error
	m.cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, cerr error) {
		if cerr != nil {
			err = cerr
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil && err == nil {
					err = fmt.Errorf("partition %d: %w", p.Partition, perr)
				}
			}
		}
	})
	return err
}

// close leaves the group through the member's agent; it may be called twice.
func (m *agentMember) close() {
	m.closed.Do(func() {
		m.cancel()
		<-m.done
		ctx, cancel := context.WithTimeout(context.Background(), groupTestCloseTimeout)
		defer cancel()
		m.cl.LeaveGroupContext(ctx)
		m.cl.Close()
	})
}
