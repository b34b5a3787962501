package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/internal/balancer"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/node"
)

// process is one real `sluice` process of a distributed cluster, with its
// output kept in a file for the test to read and show.
type process struct {
	t    *testing.T
	name string
	args []string
	cmd  *exec.Cmd
	out  string // path of its combined output
}

func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, args: args, out: filepath.Join(t.TempDir(), name+".log")}
	p.start()
	t.Cleanup(p.kill)
	return p
}

func (p *process) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(sluiceBinary, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
}

// kill SIGKILLs the process and waits for it; a no-op if it is not running.
func (p *process) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	p.cmd = nil
}

func (p *process) restart() {
	p.kill()
	p.start()
}

func (p *process) log() string {
	b, _ := os.ReadFile(p.out)
	return string(b)
}

// waitFor waits until the process's output matches re.
func (p *process) waitFor(re string, timeout time.Duration) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for !rx.MatchString(p.log()) {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not log %q within %v; its log:\n%s", p.name, re, timeout, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cluster is a distributed Sluice on one dir store: sequencers (the first
// active, the others standbys), agents, and a TCP balancer in front of the
// agents that every client uses.
type cluster struct {
	t          *testing.T
	store      string
	sequencers []*process
	seqAddrs   []string
	agents     []*process
	lb         *balancer.Balancer
}

// startCluster starts the processes; agentArgs are extra flags for every
// agent (the flush window, say).
func startCluster(t *testing.T, sequencers, agents int, agentArgs ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, store: "dir://" + t.TempDir()}
	agentAddrs := make([]string, agents)
	for i := range agentAddrs {
		agentAddrs[i] = freeAddr(t)
	}
	lb, err := balancer.Start("127.0.0.1:0", agentAddrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lb.Close)
	c.lb = lb
	for i := 0; i < sequencers; i++ {
		addr := freeAddr(t)
		args := []string{"sequencer", "--listen", addr, "--store", c.store, "--admin-addr", "", "--log-level", "info"}
		if i > 0 {
			args = append(args, "--standby")
		}
		p := startProcess(t, fmt.Sprintf("seq%d", i), args...)
		if i == 0 {
			p.waitFor("sequencer active", 20*time.Second)
		}
		c.sequencers = append(c.sequencers, p)
		c.seqAddrs = append(c.seqAddrs, addr)
	}
	for i, addr := range agentAddrs {
		args := []string{"agent", "--listen", addr, "--sequencer", c.seqAddrs[0],
			"--advertise", lb.Addr(), "--store", c.store, "--admin-addr", "", "--log-level", "info"}
		p := startProcess(t, fmt.Sprintf("agent%d", i), append(args, agentArgs...)...)
		p.waitFor("sluice agent serving", 20*time.Second)
		c.agents = append(c.agents, p)
	}
	return c
}

// active returns the active sequencer's process, from the newest epoch
// entry, as an agent finds it.
func (c *cluster) active(ctx context.Context) *process {
	c.t.Helper()
	st, err := objectio.Open(c.store)
	if err != nil {
		c.t.Fatal(err)
	}
	ep, err := node.FindActive(ctx, st)
	if err != nil {
		c.t.Fatal(err)
	}
	i := slices.Index(c.seqAddrs, ep.Addr)
	if i < 0 {
		c.t.Fatalf("the newest epoch entry names %q, not one of %v", ep.Addr, c.seqAddrs)
	}
	return c.sequencers[i]
}

func (c *cluster) dumpLogsOnFailure() {
	c.t.Cleanup(func() {
		if !c.t.Failed() {
			return
		}
		for _, p := range append(slices.Clone(c.sequencers), c.agents...) {
			c.t.Logf("---- %s ----\n%s", p.name, tail(p.log(), 40))
		}
	})
}

func tail(s string, lines int) string {
	sc := bufio.NewScanner(bytes.NewBufferString(s))
	var all []string
	for sc.Scan() {
		all = append(all, sc.Text())
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	var b bytes.Buffer
	for _, l := range all {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// produceLog produces numbered records with an idempotent franz-go producer
// and remembers where each one was acknowledged.
type produceLog struct {
	mu     sync.Mutex
	acked  map[string]ack
	acks   []time.Time // when each ack arrived, in order
	fails  int
	sent   int
	wg     sync.WaitGroup
	client *kgo.Client
}

func newProducer(t *testing.T, addr, topic string) *produceLog {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(1<<30), kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &produceLog{acked: map[string]ack{}, client: cl}
}

func (pl *produceLog) produce(ctx context.Context, value string) {
	pl.wg.Add(1)
	pl.mu.Lock()
	pl.sent++
	pl.mu.Unlock()
	pl.client.Produce(ctx, &kgo.Record{Value: []byte(value)}, func(r *kgo.Record, err error) {
		defer pl.wg.Done()
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if err != nil {
			pl.fails++
			return
		}
		pl.acked[value] = ack{r.Partition, r.Offset}
		pl.acks = append(pl.acks, time.Now())
	})
}

// produceUntil produces numbered records in the background, pausing pause
// after each batch of 64, until the returned stop is called; stop waits
// for every record to be answered.
func (pl *produceLog) produceUntil(ctx context.Context, pause time.Duration) (stop func()) {
	done := make(chan struct{})
	var producing sync.WaitGroup
	producing.Add(1)
	go func() {
		defer producing.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			pl.produce(ctx, strconv.Itoa(i))
			if i%64 == 63 {
				time.Sleep(pause) // keep memory bounded
			}
		}
	}()
	return func() {
		close(done)
		producing.Wait()
		pl.wg.Wait()
	}
}

// firstAckAfter is when the first acknowledgement after t arrived.
func (pl *produceLog) firstAckAfter(t time.Time) (time.Time, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	i, _ := slices.BinarySearchFunc(pl.acks, t, func(a, b time.Time) int { return a.Compare(b) })
	if i == len(pl.acks) {
		return time.Time{}, false
	}
	return pl.acks[i], true
}

// verifyReadBack reads every partition from the start through addr and
// checks that each acknowledged record is at its acknowledged offset, once.
func verifyReadBack(t *testing.T, ctx context.Context, addr, topic string, partitions int32, acked map[string]ack) {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]ack{}
	for len(seen) < len(acked) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Logf("fetch error (the client retries): %v", err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := seen[v]; dup {
				t.Errorf("record %s stored twice: %v and %d/%d", v, prev, r.Partition, r.Offset)
			}
			seen[v] = ack{r.Partition, r.Offset}
		})
	}
	lost := 0
	for v, a := range acked {
		if got, ok := seen[v]; !ok || got != a {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged record %s at %d/%d: read back at %v (present %v)", v, a.partition, a.offset, got, ok)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged records lost or moved", lost, len(acked))
	}
}

// TestAgentsBehindALoadBalancer runs a sequencer, a standby and 3 agents
// as real processes, with a TCP balancer in front of the agents; clients
// know only the balancer. Each client connection lands on another agent, so
// a producer, a consumer and a consumer group all use several agents at
// once: records produced through one agent are read through the others, and
// the group is coordinated through whichever agent a member reaches.
func TestAgentsBehindALoadBalancer(t *testing.T) {
	const (
		topic      = "lb"
		partitions = 8
		records    = 4000
	)
	c := startCluster(t, 2, 3, "--flush-window", "20ms")
	c.dumpLogsOnFailure()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := c.lb.Addr()

	pl := newProducer(t, addr, topic)
	if _, err := kadm.NewClient(pl.client).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range records {
		pl.produce(ctx, strconv.Itoa(i))
	}
	pl.wg.Wait()
	if pl.fails > 0 || len(pl.acked) != records {
		t.Fatalf("%d acknowledged, %d failed, of %d", len(pl.acked), pl.fails, records)
	}
	verifyReadBack(t, ctx, addr, topic, partitions, pl.acked)

	// A group of two members through the balancer consumes everything and
	// commits; the committed offsets reach the end of every partition.
	const groupName = "lb-group"
	var mu sync.Mutex
	consumed := map[string]int{}
	var members []*kgo.Client
	for range 2 {
		m, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		members = append(members, m)
	}
	var wg sync.WaitGroup
	gctx, gcancel := context.WithCancel(ctx)
	for _, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for gctx.Err() == nil {
				fs := m.PollFetches(gctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					consumed[string(r.Value)]++
					mu.Unlock()
				})
				if err := m.CommitUncommittedOffsets(gctx); err != nil && gctx.Err() == nil {
					t.Logf("commit (retried): %v", err)
				}
			}
		}()
	}
	adm := kadm.NewClient(pl.client)
	for {
		offs, err := adm.FetchOffsets(ctx, groupName)
		done := err == nil
		for p := int32(0); p < partitions && done; p++ {
			o, ok := offs.Lookup(topic, p)
			done = ok && o.At >= int64(records/partitions)
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the group's committed offsets did not reach the end: %v %v", offs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	gcancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i := range records {
		if consumed[strconv.Itoa(i)] == 0 {
			t.Fatalf("the group never consumed record %d", i)
		}
	}
}

// TestSequencerFailoverLosesNothing SIGKILLs the active sequencer again and
// again while an idempotent producer writes through the balancer; each time
// the standby takes over and the killed one comes back as a standby. Every
// acknowledged record is read back at its offset, and the failover time
// (SIGKILL to the next produce acknowledgement) is reported. Everything
// runs with the default settings (lease, heartbeat, flush window).
func TestSequencerFailoverLosesNothing(t *testing.T) {
	const (
		topic      = "failover"
		partitions = 4
	)
	kills := 10
	if testing.Short() {
		kills = 3
	}
	c := startCluster(t, 2, 2)
	c.dumpLogsOnFailure()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pl := newProducer(t, c.lb.Addr(), topic)
	if _, err := kadm.NewClient(pl.client).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	stop := pl.produceUntil(ctx, 100*time.Millisecond)
	var failovers []time.Duration
	for range kills {
		time.Sleep(1500 * time.Millisecond)
		victim := c.active(ctx)
		killed := time.Now()
		victim.kill()
		var ackAt time.Time
		for {
			at, ok := pl.firstAckAfter(killed)
			if ok {
				ackAt = at
				break
			}
			if time.Since(killed) > 30*time.Second {
				t.Fatalf("no produce was acknowledged within 30s of killing %s", victim.name)
			}
			time.Sleep(5 * time.Millisecond)
		}
		failovers = append(failovers, ackAt.Sub(killed))
		victim.args = append(slices.DeleteFunc(slices.Clone(victim.args), func(a string) bool { return a == "--standby" }), "--standby")
		victim.start()
	}
	stop()
	if pl.fails > 0 {
		t.Errorf("%d records failed despite unbounded retries", pl.fails)
	}
	verifyReadBack(t, ctx, c.lb.Addr(), topic, partitions, pl.acked)
	slices.Sort(failovers)
	t.Logf("%d sent, %d acknowledged; %d sequencer kills; failover (SIGKILL to the next ack) p50 %v max %v; all: %v",
		pl.sent, len(pl.acked), kills, failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond), failovers)
}

// TestPartitionedOldSequencerNeverAcknowledgesAfterTheNewEpoch cuts the
// active sequencer off from the agent and the standby while a commit is in
// flight in it and its metadata PUTs are held back (a store wrapper delays
// each by 4 s before it happens). The standby takes over and appends its
// epoch entry at the index the old one is about to write; the old one's
// delayed append then finds the index taken, and it steps down: every reply
// it ever released rests on an entry before the new epoch entry. The
// producer's record is acknowledged once, by the new sequencer, and is where
// the acknowledgement says.
func TestPartitionedOldSequencerNeverAcknowledgesAfterTheNewEpoch(t *testing.T) {
	dir := t.TempDir()
	store := "dir://" + dir
	// The old sequencer is reachable only through this proxy: it
	// advertises the proxy's address, so the agent and the standby dial
	// it there, and closing the proxy partitions it from both.
	oldAddr := freeAddr(t)
	proxy, err := balancer.Start("127.0.0.1:0", []string{oldAddr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	old := startProcess(t, "old", "sequencer", "--listen", oldAddr, "--advertise", proxy.Addr(), "--store", store,
		"--store-put-latency", "4s", "--admin-addr", "", "--log-level", "info")
	old.waitFor("sequencer active", 40*time.Second)
	standbyAddr := freeAddr(t)
	standby := startProcess(t, "standby", "sequencer", "--listen", standbyAddr, "--standby", "--store", store,
		"--admin-addr", "", "--log-level", "info")
	agentAddr := freeAddr(t)
	agent := startProcess(t, "agent", "agent", "--listen", agentAddr, "--sequencer", proxy.Addr(), "--store", store,
		"--admin-addr", "", "--flush-window", "10ms", "--log-level", "info")
	defer func() {
		if t.Failed() {
			for _, p := range []*process{old, standby, agent} {
				t.Logf("---- %s ----\n%s", p.name, tail(p.log(), 60))
			}
		}
	}()
	agent.waitFor("sluice agent serving", 20*time.Second)
	standby.waitFor("link: following sequencer", 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "p"
	pl := newProducer(t, agentAddr, topic)
	if _, err := kadm.NewClient(pl.client).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	pl.produce(ctx, "the record")
	// The agent seals its object after 10 ms, writes it (its store is not
	// slowed) and sends the commit; the old sequencer's append of it then
	// sleeps for 4 s. Cut the old sequencer off well inside that.
	time.Sleep(500 * time.Millisecond)
	proxy.Close()
	pl.wg.Wait()
	if pl.fails != 0 || len(pl.acked) != 1 {
		t.Fatalf("the record was not acknowledged: %d failures", pl.fails)
	}
	old.waitFor("sequencer fenced", 30*time.Second)

	st, err := objectio.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	newEpoch := epochIndex(t, ctx, st, standbyAddr)
	if newEpoch == 0 {
		t.Fatal("the standby's epoch entry is not in the log")
	}
	m := regexp.MustCompile(`last_acknowledged_entry=(\d+)`).FindStringSubmatch(old.log())
	if m == nil {
		t.Fatal("the old sequencer's fence line names no last acknowledged entry")
	}
	lastAcked, _ := strconv.ParseUint(m[1], 10, 64)
	if lastAcked >= newEpoch {
		t.Fatalf("the old sequencer acknowledged entry %d, at or after the new epoch entry %d", lastAcked, newEpoch)
	}
	// The commit the old sequencer was appending lost the race for its
	// index to the new epoch entry: the standby took over before the old
	// one's PUT happened, which is the case this test is about.
	if !regexp.MustCompile(`metadata log append failed|sequencer fenced`).MatchString(old.log()) {
		t.Fatal("the old sequencer never tried to append after the partition")
	}
	verifyReadBack(t, ctx, agentAddr, topic, 1, pl.acked)
	t.Logf("new epoch entry %d; the old sequencer's last acknowledged entry %d", newEpoch, lastAcked)
}

// epochIndex returns the index of the epoch entry that names addr, or 0.
func epochIndex(t *testing.T, ctx context.Context, st objectio.Store, addr string) uint64 {
	t.Helper()
	objs, err := objectio.ListAll(ctx, st, sequencer.LogPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		data, err := st.Get(ctx, o.Key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sequencer.UnmarshalEntry(data)
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := sequencer.ParseIndexKey(o.Key, sequencer.LogPrefix)
		for _, op := range e.Ops {
			if op.Epoch != nil && op.Epoch.Addr == addr {
				return idx
			}
		}
	}
	return 0
}
