package server

// The shared half of the consumer-group client tests. Each test runs one
// unmodified Kafka client as a group of three members over a 16-partition
// topic, kills one member midway, starts a fourth, and then checks what the
// members consumed against what was produced and what the broker
// acknowledged as committed.
//
// Every client connects through a killProxy, which the broker advertises as
// its address. The proxy knows each connection's member by the client id in
// its first request, so it can kill a member the way a crash would: every
// connection of the member is cut at once and any new one is refused before
// its first request reaches the broker. The member never sends LeaveGroup,
// whatever its client does on close, and the broker learns of the death
// only from the session timeout. The proxy also reads every OffsetCommit
// and its response, so the commits the broker acknowledged are known
// exactly, for every client alike, including those whose response the dead
// member never saw.
//
// Members hand each record to the groupRun (deliver) before their client
// may commit it: franz-go marks it afterwards, sarama marks it, kafka-go
// passes it to CommitMessages, confluent stores its offset. Commits then
// run in the background at groupTestCommitInterval and on every revoke.
// So a commit never covers a record that was not delivered first, and a
// record's delivery is "committed" once a commit covering it is acknowledged.
// See checkGroupRun for what must hold.
//
// The members of franz-go, sarama and confluent rebalance under load: the
// victim dies with records delivered and not yet committed, while records
// are still being produced. kafka-go's Reader cannot consume correctly
// across a rebalance under load (see its test), so its group changes only
// while the members are idle.

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
)

const (
	groupTestPartitions = 16
	groupTestRecords    = 24_000
	// groupTestRecordsBefore are produced before the kill, the rest after
	// (see runGroupTest for when exactly).
	groupTestRecordsBefore = 12_000
	groupTestProduceChunk  = 750
	groupTestProduceEvery  = 400 * time.Millisecond

	// groupTestSessionTimeout is Kafka's group.min.session.timeout.ms, the
	// least the broker accepts: a killed member's partitions move after
	// about this long.
	groupTestSessionTimeout   = 6 * time.Second
	groupTestHeartbeat        = time.Second
	groupTestRebalanceTimeout = 15 * time.Second
	// groupTestSessionSlack allows for when a session's last renewal was
	// seen relative to the kill.
	groupTestSessionSlack   = 500 * time.Millisecond
	groupTestCommitInterval = 500 * time.Millisecond
	// groupTestInitialDelay lets the three first members form the group's
	// first generation together.
	groupTestInitialDelay = 500 * time.Millisecond

	// groupTestPhaseTimeout bounds each wait of a scenario. A healthy run
	// takes well under it; it only turns a hang into a diagnosis.
	groupTestPhaseTimeout = 30 * time.Second
	// groupTestCloseTimeout bounds how long a member may take to leave.
	groupTestCloseTimeout = 15 * time.Second
	// groupTestZombieAfter is how long after the survivors have left the
	// killed member's client may still be closing before it gets its
	// network back (see waitAbandoned).
	groupTestZombieAfter = 2 * time.Second
)

// groupClient is one client library under test as a group member.
type groupClient struct {
	name string
	// join starts a member with client id id, consuming run.topic in
	// run.group from the earliest offset. The member calls run.deliver for
	// every record before its client may commit it, stops consuming as
	// soon as deliver returns false, commits in the background every
	// groupTestCommitInterval and on revoke, and reports client-level
	// errors to run.clientError.
	join func(run *groupRun, id string) (groupMember, error)
	// idleRebalances makes the group change membership only while every
	// member is idle, for a client that cannot consume correctly across a
	// rebalance under load; see the client's test for why.
	idleRebalances bool
}

// groupMember is one running member.
type groupMember interface {
	// leave stops consuming, commits what was delivered, leaves the group
	// and closes the client.
	leave(ctx context.Context) error
	// abandon closes the client of a killed member, whose connections the
	// proxy has cut, so nothing it sends arrives (see waitAbandoned).
	abandon()
}

// groupDelivery is one record handed to a member by its client.
type groupDelivery struct {
	seq       int64 // order of events in the run, shared with commits
	at        time.Time
	member    string
	partition int32
	offset    int64
	key       string
}

// groupCommit is one partition of an OffsetCommit the broker acknowledged.
type groupCommit struct {
	seq       int64 // taken before the response was passed on to the member
	member    string
	partition int32
	offset    int64 // the next offset to consume
}

// groupRun is the state of one scenario: what was delivered to whom, what
// the broker acknowledged as committed, and which member was killed.
type groupRun struct {
	t            *testing.T
	addr         string // the proxy; every client connects through it
	topic, group string
	proxy        *killProxy

	mu         sync.Mutex
	seq        int64
	deliveries []groupDelivery
	commits    []groupCommit
	killed     map[string]bool
	revivedAt  int64    // seq when the killed member got its network back, if it did
	errs       []string // client errors of live members
}

// deliver records that member's client handed it a record. It returns false
// once the member is killed: a dead process processes nothing, so the
// member must stop without committing the record.
func (run *groupRun) deliver(member string, partition int32, offset int64, key []byte) bool {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.killed[member] {
		return false
	}
	run.seq++
	run.deliveries = append(run.deliveries, groupDelivery{seq: run.seq, at: time.Now(), member: member, partition: partition, offset: offset, key: string(key)})
	return true
}

// clientError records an error a member's client reported. A healthy
// broker causes none for a live member; a killed member's are expected.
func (run *groupRun) clientError(member string, err error) {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.killed[member] {
		return
	}
	run.errs = append(run.errs, fmt.Sprintf("%s: %v", member, err))
}

// clientErrors summarises the client errors of live members so far.
func (run *groupRun) clientErrors() string {
	run.mu.Lock()
	defer run.mu.Unlock()
	if len(run.errs) == 0 {
		return "none"
	}
	shown := run.errs[:min(len(run.errs), problemsShownMax)]
	return fmt.Sprintf("%d, e.g. %s", len(run.errs), strings.Join(shown, "; "))
}

// acked is the proxy's report of an acknowledged OffsetCommit partition.
func (run *groupRun) acked(member, group, topic string, partition int32, offset int64) {
	if group != run.group || topic != run.topic {
		return
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	run.seq++
	run.commits = append(run.commits, groupCommit{seq: run.seq, member: member, partition: partition, offset: offset})
}

// kill makes member stop consuming and cuts its connections, as a crash
// would: nothing it delivers from now on counts, and nothing it sends
// reaches the broker.
func (run *groupRun) kill(member string) {
	run.mu.Lock()
	run.killed[member] = true
	run.mu.Unlock()
	run.proxy.kill(member)
}

// revive lets a killed member connect again (see waitAbandoned).
func (run *groupRun) revive(member string) {
	run.mu.Lock()
	run.seq++
	run.revivedAt = run.seq
	run.mu.Unlock()
	run.proxy.revive(member)
}

// deliveredCount returns how many records each member was handed.
func (run *groupRun) deliveredCount() map[string]int {
	run.mu.Lock()
	defer run.mu.Unlock()
	n := map[string]int{}
	for _, d := range run.deliveries {
		n[d.member]++
	}
	return n
}

// runGroupTest is the whole scenario for one client.
func runGroupTest(t *testing.T, gc groupClient) {
	start := time.Now()
	proxy := startKillProxy(t)
	sa := startBroker(t, nil, Config{
		AdvertiseHost: "127.0.0.1", AdvertisePort: proxy.port(),
		GroupInitialRebalanceDelay: groupTestInitialDelay,
	})
	proxy.setUpstream(sa.Addr())
	run := &groupRun{
		t: t, addr: proxy.addr(), topic: gc.name + "-group", group: gc.name + "-group", proxy: proxy,
		killed: map[string]bool{},
	}
	proxy.onCommit = run.acked
	createTestTopic(t, run.addr, run.topic, groupTestPartitions)
	admin := newGroupAdmin(t, run.addr)

	plan := planRecords(groupTestRecords, []string{"none"}, groupTestPartitions, time.Now().Add(-time.Hour))
	l := newLedger(plan)
	ctx, cancel := context.WithTimeout(context.Background(), 2*groupTestPhaseTimeout)
	defer cancel()
	produce := func(recs []*plannedRecord) {
		t.Helper()
		if err := franzProduce(ctx, t, run.addr, run.topic, "none", recs, l); err != nil {
			t.Fatalf("produce %d records: %v", len(recs), err)
		}
	}
	// produceWhileConsuming produces recs in chunks in the background.
	produceWhileConsuming := func(recs []*plannedRecord) <-chan error {
		produced := make(chan error, 1)
		go func() {
			for len(recs) > 0 {
				chunk := recs[:min(groupTestProduceChunk, len(recs))]
				recs = recs[len(chunk):]
				if err := franzProduce(ctx, t, run.addr, run.topic, "none", chunk, l); err != nil {
					produced <- fmt.Errorf("produce %d records while consuming: %w", len(chunk), err)
					return
				}
				time.Sleep(groupTestProduceEvery)
			}
			produced <- nil
		}()
		return produced
	}

	var (
		membersMu sync.Mutex
		members   = map[string]groupMember{}
	)
	names := []string{gc.name + "-1", gc.name + "-2", gc.name + "-3", gc.name + "-4"}
	victim, joiner := names[0], names[3]
	proxy.expectMembers(names...)
	join := func(name string) {
		t.Helper()
		m, err := gc.join(run, name)
		if err != nil {
			t.Fatalf("start member %s: %v", name, err)
		}
		membersMu.Lock()
		members[name] = m
		membersMu.Unlock()
	}
	defer func() {
		// Whatever failed, release every client still running.
		membersMu.Lock()
		defer membersMu.Unlock()
		for _, m := range members {
			ctx, cancel := context.WithTimeout(context.Background(), groupTestCloseTimeout)
			m.leave(ctx)
			cancel()
		}
	}()
	everyFirstMemberConsuming := func() (bool, string) {
		n := run.deliveredCount()
		return n[names[0]] > 0 && n[names[1]] > 0 && n[names[2]] > 0, fmt.Sprintf("records delivered per member: %v", n)
	}

	var (
		killed, consuming time.Time
		settled           time.Time // idleRebalances: when the group settled without the victim
		abandoned         = make(chan struct{})
		closedVictim      sync.Once
	)
	kill := func() {
		run.kill(victim)
		killed = time.Now()
		membersMu.Lock()
		m := members[victim]
		delete(members, victim)
		membersMu.Unlock()
		go func() {
			defer close(abandoned)
			m.abandon()
		}()
		t.Cleanup(func() { closedVictim.Do(func() { run.waitAbandoned(victim, abandoned) }) })
	}
	if !gc.idleRebalances {
		// Half the records wait for the group; the rest are produced while
		// it consumes, through the kill and the join, so the victim dies
		// with records in flight.
		produce(plan[:groupTestRecordsBefore])
		for _, name := range names[:3] {
			join(name)
		}
		waitFor(t, groupTestPhaseTimeout, "every first member to consume", everyFirstMemberConsuming)
		consuming = time.Now()
		produced := produceWhileConsuming(plan[groupTestRecordsBefore:])
		time.Sleep(2 * groupTestProduceEvery)
		kill()
		join(joiner)
		if err := <-produced; err != nil {
			t.Fatal(err)
		}
	} else {
		// The group changes only while every member is idle: it forms
		// before anything is produced, the first half is consumed and
		// committed before the kill, and the rest is produced once the
		// group has settled without the victim and with the joiner.
		for _, name := range names[:3] {
			join(name)
		}
		waitForMembers(t, admin, run.group, names[:3])
		produce(plan[:groupTestRecordsBefore])
		waitFor(t, groupTestPhaseTimeout, "every first member to consume", everyFirstMemberConsuming)
		consuming = time.Now()
		before := endOffsets(t, run.addr, run.topic, groupTestPartitions)
		waitFor(t, groupTestPhaseTimeout, "the group to commit the first records", func() (bool, string) {
			return committedUpTo(t, admin, run, before)
		})
		kill()
		join(joiner)
		waitForMembers(t, admin, run.group, names[1:])
		settled = time.Now()
		if err := <-produceWhileConsuming(plan[groupTestRecordsBefore:]); err != nil {
			t.Fatal(err)
		}
	}
	l.requireAllAcked(t)
	ends := endOffsets(t, run.addr, run.topic, groupTestPartitions)

	// Done when the group's committed offsets reach the high watermarks.
	reached, stuck := poll(groupTestPhaseTimeout, func() (bool, string) { return committedUpTo(t, admin, run, ends) })
	doneAt := time.Now()
	if !reached {
		// Check the run anyway: what went wrong is usually in it.
		t.Errorf("waited %v for the group to commit every partition up to its high watermark: %s", groupTestPhaseTimeout, stuck)
	}
	committed := fetchCommitted(t, admin, run.group, run.topic)

	for _, name := range names[1:] {
		ctx, cancel := context.WithTimeout(context.Background(), groupTestCloseTimeout)
		membersMu.Lock()
		m := members[name]
		delete(members, name)
		membersMu.Unlock()
		err := m.leave(ctx)
		cancel()
		if err != nil {
			run.clientError(name, fmt.Errorf("leave: %w", err))
		}
	}
	closedVictim.Do(func() { run.waitAbandoned(victim, abandoned) })
	// Leaving may commit once more, and the killed member's client may try
	// to; none of it may move anything.
	if after := fetchCommitted(t, admin, run.group, run.topic); !maps.Equal(after, committed) {
		t.Errorf("committed offsets changed when the members left and the killed member's client closed: %v, then %v", committed, after)
	}

	run.mu.Lock()
	defer run.mu.Unlock()
	for _, c := range run.commits {
		if run.revivedAt > 0 && c.seq > run.revivedAt && c.member == victim {
			t.Errorf("the killed member %s, back on the network with its expired membership, had its commit of partition %d offset %d acknowledged; want it refused (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION)",
				victim, c.partition, c.offset)
		}
	}
	n := map[string]int{}
	var joinerFirst time.Time
	for _, d := range run.deliveries {
		n[d.member]++
		if d.member == joiner && joinerFirst.IsZero() {
			joinerFirst = d.at
		}
	}
	t.Logf("%s: all three members consuming after %v; %s killed, %s joined and got its first record %v later; every partition committed to its end %v after the kill, %v in all; %d deliveries of %d records %v; %d acknowledged commits",
		gc.name, consuming.Sub(start).Round(time.Millisecond), victim, joiner, joinerFirst.Sub(killed).Round(time.Millisecond),
		doneAt.Sub(killed).Round(time.Millisecond), doneAt.Sub(start).Round(time.Millisecond), len(run.deliveries), len(plan), n, len(run.commits))
	if n[joiner] == 0 {
		t.Errorf("member %s joined after %s was killed but was never handed a record: the scenario did not move any partition to it", joiner, victim)
	}
	// The join phase waits for every member, so the joiner gets partitions
	// only once the victim's session has expired: at least a session
	// timeout after the victim's last heartbeat or commit, which was at
	// most a heartbeat interval before the kill. Any earlier, and the
	// victim left the group after all (the kill was no crash) or the
	// broker expired its session early.
	moved, how := joinerFirst, "got its first record"
	if gc.idleRebalances {
		moved, how = settled, "was in a Stable group without the victim"
	}
	if early := groupTestSessionTimeout - groupTestHeartbeat - groupTestSessionSlack; !moved.IsZero() && moved.Sub(killed) < early {
		t.Errorf("member %s %s %v after %s was killed, want at least %v (the session timeout %v less a heartbeat interval and %v of slack)",
			joiner, how, moved.Sub(killed).Round(time.Millisecond), victim, early, groupTestSessionTimeout, groupTestSessionSlack)
	}
	p := checkGroupRun(plan, ends, committed, run.deliveries, run.commits, victim)
	for _, e := range run.errs {
		p.add("client error", e)
	}
	for _, id := range proxy.unknownClients() {
		p.add("unattributed connection", fmt.Sprintf("a connection with client id %q, which no member has: the proxy could not kill it", id))
	}
	p.fatal(t, fmt.Sprintf("%s group of 3 members, one killed and one joined", gc.name))
}

// waitAbandoned waits for the killed member's client to close. A client
// that cannot close while the network is down (librdkafka's consumer close
// can block forever then: confluentinc/librdkafka#3740, #4519) gets its
// network back after a while, as a zombie would: whatever it then sends with
// its expired membership, the broker must refuse, which the caller checks.
func (run *groupRun) waitAbandoned(victim string, abandoned <-chan struct{}) {
	select {
	case <-abandoned:
		return
	case <-time.After(groupTestZombieAfter):
	}
	run.t.Logf("the client of the killed member %s is still closing; it may connect again", victim)
	run.revive(victim)
	select {
	case <-abandoned:
	case <-time.After(groupTestCloseTimeout):
		run.t.Errorf("the client of the killed member %s did not close within %v of getting its network back", victim, groupTestCloseTimeout)
	}
}

// committedUpTo reports whether the group's committed offsets equal ends,
// and if not, how far they are and what the group looks like.
func committedUpTo(t *testing.T, admin *kadm.Client, run *groupRun, ends map[int32]int64) (bool, string) {
	committed := fetchCommitted(t, admin, run.group, run.topic)
	var behind []string
	for p := range int32(len(ends)) {
		if committed[p] != ends[p] {
			behind = append(behind, fmt.Sprintf("p%d committed %d of %d", p, committed[p], ends[p]))
		}
	}
	if len(behind) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("%s; delivered per member: %v; client errors: %s; group: %s",
		strings.Join(behind, ", "), run.deliveredCount(), run.clientErrors(), describeGroup(admin, run.group))
}

// waitForMembers waits until the group is Stable with exactly the members
// whose client ids are named, each with partitions assigned.
func waitForMembers(t *testing.T, admin *kadm.Client, group string, clientIDs []string) {
	t.Helper()
	want := slices.Clone(clientIDs)
	sort.Strings(want)
	waitFor(t, groupTestPhaseTimeout, fmt.Sprintf("group %s to be Stable with members %v", group, want), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		described, err := admin.DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := described[group]
		var got []string
		assigned := true
		for _, m := range g.Members {
			got = append(got, m.ClientID)
			ca, ok := m.Assigned.AsConsumer()
			assigned = assigned && ok && len(ca.Topics) > 0
		}
		sort.Strings(got)
		return g.Err == nil && g.State == "Stable" && slices.Equal(got, want) && assigned, describeGroup(admin, group)
	})
}

// checkGroupRun checks a group run against the plan. It assumes what the
// members guarantee: a member's commit covers only records it was handed.
//
// Definitions. A delivery is one record handed to one member, in run order.
// An acknowledged commit (member m, partition p, offset c) covers the
// records of p below c. A delivery of record r to m is committed if m later
// got an acknowledged commit covering r.
//
// What must hold:
//   - complete: every produced record is delivered at least once, at the
//     partition and offset its producer was acknowledged with;
//   - committed to the end: the group's committed offset of every
//     partition equals its high watermark, which equals what was produced
//     to it;
//   - not re-read after a commit: once the broker has acknowledged a commit
//     covering a record, no member is handed that record again (whoever
//     owns the partition next resumes from that commit or later);
//   - committed once: at most one delivery of each record is committed;
//   - only the dead repeat: a record delivered more than once was delivered
//     first to the killed member, which had not committed it when it died,
//     and every copy but the last went to the killed member.
//
// Together the last three say: no record is consumed twice by members
// whose consumption was followed by a commit covering it, and the only
// records consumed twice are those the killed member had consumed past its
// partition's last commit when it died.
func checkGroupRun(plan []*plannedRecord, ends, committed map[int32]int64, deliveries []groupDelivery, commits []groupCommit, victim string) *problems {
	p := &problems{}
	wantCount := map[int32]int64{}
	for _, r := range plan {
		wantCount[r.Partition]++
	}
	for part := range int32(len(ends)) {
		if ends[part] != wantCount[part] {
			p.add("high watermark", fmt.Sprintf("partition %d: high watermark %d, want %d (the records produced to it)", part, ends[part], wantCount[part]))
		}
		if committed[part] != ends[part] {
			p.add("committed offset", fmt.Sprintf("partition %d: committed offset %d, want the high watermark %d", part, committed[part], ends[part]))
		}
	}

	type pos struct {
		partition int32
		offset    int64
	}
	byPos := map[pos][]groupDelivery{}
	for _, d := range deliveries {
		id, ok := recordID([]byte(d.key))
		if !ok || id < 0 || id >= len(plan) {
			p.add("unknown record", fmt.Sprintf("%s was handed partition %d offset %d with key %q, which was never produced", d.member, d.partition, d.offset, d.key))
			continue
		}
		if r := plan[id]; r.Partition != d.partition || r.ackedOff != d.offset {
			p.add("misplaced record", fmt.Sprintf("%s was handed record %d at partition %d offset %d; it was acknowledged at partition %d offset %d",
				d.member, id, d.partition, d.offset, r.Partition, r.ackedOff))
			continue
		}
		k := pos{d.partition, d.offset}
		byPos[k] = append(byPos[k], d)
	}
	for _, r := range plan {
		if len(byPos[pos{r.Partition, r.ackedOff}]) == 0 {
			p.add("never consumed", fmt.Sprintf("record %d (partition %d offset %d) was delivered to no member", r.ID, r.Partition, r.ackedOff))
		}
	}

	// Commits per partition in run order, and per member and partition.
	type memberPart struct {
		member    string
		partition int32
	}
	commitsOf := map[int32][]groupCommit{}
	commitsBy := map[memberPart][]groupCommit{}
	for _, c := range commits {
		commitsOf[c.partition] = append(commitsOf[c.partition], c)
		k := memberPart{c.member, c.partition}
		commitsBy[k] = append(commitsBy[k], c)
	}
	// coveredBefore: the highest acknowledged commit of d's partition
	// before d, from any member.
	coveredBefore := func(d groupDelivery) (groupCommit, bool) {
		var best groupCommit
		for _, c := range commitsOf[d.partition] {
			if c.seq > d.seq {
				break
			}
			if c.offset > best.offset {
				best = c
			}
		}
		return best, best.offset > d.offset
	}
	// committedBy: the first acknowledged commit by d's member after d
	// that covers it.
	committedBy := func(d groupDelivery) (groupCommit, bool) {
		for _, c := range commitsBy[memberPart{d.member, d.partition}] {
			if c.seq > d.seq && c.offset > d.offset {
				return c, true
			}
		}
		return groupCommit{}, false
	}

	keys := make([]pos, 0, len(byPos))
	for k := range byPos {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].partition < keys[j].partition || keys[i].partition == keys[j].partition && keys[i].offset < keys[j].offset
	})
	for _, k := range keys {
		ds := byPos[k]
		where := fmt.Sprintf("partition %d offset %d", k.partition, k.offset)
		var committedTo []string
		for i, d := range ds {
			if c, ok := coveredBefore(d); ok {
				p.add("re-read after commit", fmt.Sprintf("%s: handed to %s (event %d) after %s's commit of offset %d was acknowledged (event %d)",
					where, d.member, d.seq, c.member, c.offset, c.seq))
			}
			c, isCommitted := committedBy(d)
			if isCommitted {
				committedTo = append(committedTo, fmt.Sprintf("%s (event %d, committed at event %d)", d.member, d.seq, c.seq))
			}
			if i == len(ds)-1 {
				continue
			}
			switch {
			case d.member != victim:
				p.add("repeated by a live member", fmt.Sprintf("%s: handed to %s (event %d), then again to %s (event %d); only the killed member %s's records may repeat",
					where, d.member, d.seq, ds[i+1].member, ds[i+1].seq, victim))
			case isCommitted:
				p.add("repeated after commit", fmt.Sprintf("%s: handed to the killed member %s (event %d), committed by it at event %d, then handed to %s (event %d)",
					where, d.member, d.seq, c.seq, ds[i+1].member, ds[i+1].seq))
			}
		}
		if len(committedTo) > 1 {
			p.add("committed twice", fmt.Sprintf("%s: delivered and committed by %s", where, strings.Join(committedTo, " and ")))
		}
	}
	return p
}

// waitFor polls cond until it holds, failing the test with cond's last
// description after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if ok, state := poll(timeout, cond); !ok {
		t.Fatalf("waited %v for %s: %s", timeout, what, state)
	}
}

// poll calls cond until it holds or timeout passes, and returns its last
// answer.
func poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok || time.Now().After(deadline) {
			return ok, state
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// newGroupAdmin returns an admin client closed at the end of the test.
func newGroupAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("admin"))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// fetchCommitted returns the group's committed offset of each partition of
// topic; a partition with none is missing.
func fetchCommitted(t *testing.T, admin *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := admin.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("fetch the committed offsets of group %s: %v", group, err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// describeGroup says what the broker reports of a group: its state,
// generation, and each member's assigned partitions.
func describeGroup(admin *kadm.Client, group string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	described, err := admin.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Sprintf("describe failed: %v", err)
	}
	g, ok := described[group]
	if !ok {
		return "not described"
	}
	if g.Err != nil {
		return fmt.Sprintf("describe failed: %v", g.Err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "state %s, protocol %s", g.State, g.Protocol)
	for _, m := range g.Members {
		fmt.Fprintf(&b, "; member %s (client %s)", m.MemberID, m.ClientID)
		if ca, ok := m.Assigned.AsConsumer(); ok {
			for _, t := range ca.Topics {
				fmt.Fprintf(&b, " %s%v", t.Topic, t.Partitions)
			}
		}
	}
	return b.String()
}

// killProxy forwards Kafka connections to the broker, knows which member
// each belongs to by the client id of its first request, can kill a member
// by cutting all its connections, and reports every acknowledged
// OffsetCommit partition to onCommit.
type killProxy struct {
	ln       net.Listener
	upstream string
	// onCommit is set before any client connects.
	onCommit func(member, group, topic string, partition int32, offset int64)

	mu      sync.Mutex
	conns   map[string][]net.Conn // client id -> both ends of its connections
	killed  map[string]bool
	members map[string]bool // the member client ids the test uses
	seen    map[string]bool // every client id that connected
	wg      sync.WaitGroup
}

// proxyFrameBytesMax bounds a frame the proxy reads; the broker's own
// bound is lower.
const proxyFrameBytesMax = 256 << 20

// expectedClientIDs are the client ids of the test's non-member clients:
// franzProduce's producers and createTestTopic's admin (kgo's default) and
// newGroupAdmin's.
var expectedClientIDs = map[string]bool{"kgo": true, "admin": true}

func startKillProxy(t *testing.T) *killProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	kp := &killProxy{ln: ln, conns: map[string][]net.Conn{}, killed: map[string]bool{}, members: map[string]bool{}, seen: map[string]bool{}}
	kp.wg.Add(1)
	go kp.accept()
	t.Cleanup(kp.close)
	return kp
}

func (kp *killProxy) addr() string { return kp.ln.Addr().String() }

func (kp *killProxy) port() int32 { return int32(kp.ln.Addr().(*net.TCPAddr).Port) }

func (kp *killProxy) setUpstream(addr string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.upstream = addr
}

// expectMembers names the client ids of the members.
func (kp *killProxy) expectMembers(ids ...string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	for _, id := range ids {
		kp.members[id] = true
	}
}

// unknownClients lists the client ids that connected and are neither a
// member nor one of the expected non-member clients.
func (kp *killProxy) unknownClients() []string {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	var out []string
	for id := range kp.seen {
		if !expectedClientIDs[id] && !kp.members[id] {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// kill cuts every connection of member and refuses its new ones.
func (kp *killProxy) kill(member string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.killed[member] = true
	for _, c := range kp.conns[member] {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as when a process dies
		}
		c.Close()
	}
	delete(kp.conns, member)
}

// forget drops a finished connection's ends.
func (kp *killProxy) forget(id string, ends ...net.Conn) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	kp.conns[id] = slices.DeleteFunc(kp.conns[id], func(c net.Conn) bool { return slices.Contains(ends, c) })
}

// revive lets a killed member connect again; its cut connections stay cut.
func (kp *killProxy) revive(member string) {
	kp.mu.Lock()
	defer kp.mu.Unlock()
	delete(kp.killed, member)
}

func (kp *killProxy) close() {
	kp.ln.Close()
	kp.mu.Lock()
	for _, cs := range kp.conns {
		for _, c := range cs {
			c.Close()
		}
	}
	kp.conns = map[string][]net.Conn{}
	kp.mu.Unlock()
	kp.wg.Wait()
}

func (kp *killProxy) accept() {
	defer kp.wg.Done()
	for {
		c, err := kp.ln.Accept()
		if err != nil {
			return
		}
		kp.wg.Add(1)
		go func() {
			defer kp.wg.Done()
			kp.serve(c)
		}()
	}
}

// proxyConn is one proxied connection: the OffsetCommit requests forwarded
// whose responses have not come back yet, by correlation id.
type proxyConn struct {
	client  string
	mu      sync.Mutex
	commits map[int32]*kmsg.OffsetCommitRequest
}

// serve reads the first request to learn the client id, and only then
// connects upstream, so that a killed member's new connection never
// reaches the broker.
func (kp *killProxy) serve(client net.Conn) {
	defer client.Close()
	cr := bufio.NewReaderSize(client, 64<<10)
	first, err := readFrame(cr)
	if err != nil {
		return
	}
	hdr, _, err := codec.ParseRequest(first[4:])
	if err != nil {
		return
	}
	id := string(hdr.ClientID)
	kp.mu.Lock()
	kp.seen[id] = true
	upstreamAddr := kp.upstream
	if kp.killed[id] {
		kp.mu.Unlock()
		return
	}
	kp.mu.Unlock()
	server, err := net.Dial("tcp", upstreamAddr)
	if err != nil {
		return
	}
	defer server.Close()
	kp.mu.Lock()
	if kp.killed[id] {
		kp.mu.Unlock()
		return
	}
	kp.conns[id] = append(kp.conns[id], client, server)
	kp.mu.Unlock()
	defer kp.forget(id, client, server)

	pc := &proxyConn{client: id, commits: map[int32]*kmsg.OffsetCommitRequest{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		kp.pipeResponses(pc, bufio.NewReaderSize(server, 64<<10), client)
		client.Close()
		server.Close()
	}()
	kp.pipeRequests(pc, first, cr, server)
	client.Close()
	server.Close()
	<-done
}

// pipeRequests forwards client requests, noting OffsetCommits.
func (kp *killProxy) pipeRequests(pc *proxyConn, first []byte, cr *bufio.Reader, server net.Conn) {
	frame := first
	for {
		pc.noteRequest(frame[4:])
		if _, err := server.Write(frame); err != nil {
			return
		}
		var err error
		if frame, err = readFrame(cr); err != nil {
			return
		}
	}
}

// pipeResponses forwards broker responses, reporting the acknowledged
// partitions of each OffsetCommit before the member can see the response.
func (kp *killProxy) pipeResponses(pc *proxyConn, sr *bufio.Reader, client net.Conn) {
	for {
		frame, err := readFrame(sr)
		if err != nil {
			return
		}
		kp.noteResponse(pc, frame[4:])
		if _, err := client.Write(frame); err != nil {
			return
		}
	}
}

func (pc *proxyConn) noteRequest(body []byte) {
	hdr, rest, err := codec.ParseRequest(body)
	if err != nil || hdr.APIKey != int16(kmsg.OffsetCommit) {
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = hdr.APIVersion
	if err := req.ReadFrom(rest); err != nil {
		panic(fmt.Sprintf("proxy: OffsetCommit v%d from %s does not decode: %v", hdr.APIVersion, pc.client, err))
	}
	pc.mu.Lock()
	pc.commits[hdr.CorrelationID] = req
	pc.mu.Unlock()
}

func (kp *killProxy) noteResponse(pc *proxyConn, body []byte) {
	if len(body) < 4 {
		return
	}
	corr := int32(binary.BigEndian.Uint32(body))
	pc.mu.Lock()
	req := pc.commits[corr]
	delete(pc.commits, corr)
	pc.mu.Unlock()
	if req == nil {
		return
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	r := kbin.Reader{Src: body[4:]}
	if resp.IsFlexible() {
		for n := r.Uvarint(); n > 0; n-- { // response header tagged fields
			r.Uvarint()
			r.Span(int(r.Uvarint()))
		}
	}
	if !r.Ok() {
		panic(fmt.Sprintf("proxy: OffsetCommit v%d response header to %s is truncated", req.Version, pc.client))
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		panic(fmt.Sprintf("proxy: OffsetCommit v%d response to %s does not decode: %v", req.Version, pc.client, err))
	}
	asked := map[string]map[int32]int64{}
	for _, t := range req.Topics {
		asked[t.Topic] = map[int32]int64{}
		for _, p := range t.Partitions {
			asked[t.Topic][p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			off, ok := asked[t.Topic][p.Partition]
			if p.ErrorCode == 0 && ok {
				kp.onCommit(pc.client, req.Group, t.Topic, p.Partition, off)
			}
		}
	}
}

// readFrame reads one size-prefixed Kafka frame, prefix included.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > proxyFrameBytesMax {
		return nil, errors.New("proxy: frame too large")
	}
	frame := make([]byte, 4+n)
	copy(frame, size[:])
	_, err := io.ReadFull(r, frame[4:])
	return frame, err
}
