package main

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
)

// TestGroupCommittedOffsetsSurviveSIGKILLAndConsumerResumesFromThem commits
// a group's offsets as a member of the group (franz-go, with the member's
// generation) and another group's through the admin API (kadm, no member),
// SIGKILLs the real binary right after the commits are acknowledged, and
// restarts it on the same directory. The offsets must be exactly as last
// committed, and a new member of the group must resume from them, not from
// the start. The member commits more than a snapshot interval's worth of
// times first, so that recovery reads the offsets from a snapshot and then
// from the log entries after it.
func TestGroupCommittedOffsetsSurviveSIGKILLAndConsumerResumesFromThem(t *testing.T) {
	const (
		topic      = "group-restart"
		group      = "group-restart-member"
		adminGroup = "group-restart-admin"
		partitions = 4
		perPart    = 250
		// snapshotEvery is the sequencer's default snapshot interval, in
		// log entries; each commit below is one entry.
		snapshotEvery = 1000
	)
	// No initial rebalance delay: one member forms the group at once.
	t.Setenv("SLUICE_GROUP_INITIAL_REBALANCE_DELAY", "0")
	dataDir, addr := t.TempDir(), freeAddr(t)
	b := startBinary(t, dataDir, addr)
	defer func() { b.kill() }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin := newRestartAdmin(t, addr)
	if _, err := admin.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var recs []*kgo.Record
	for part := int32(0); part < partitions; part++ {
		for i := 0; i < perPart; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: fmt.Appendf(nil, "%d/%d", part, i)})
		}
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// A member reads each partition past its target and commits the
	// targets, which differ per partition, so that no partition's offset
	// can pass for another's.
	target := map[int32]int64{}
	for part := int32(0); part < partitions; part++ {
		target[part] = 100 + 37*int64(part)
	}
	member := newRestartMember(t, addr, topic, group)
	read := map[int32]int64{}
	for !reachedTargets(read, target) {
		fs := member.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading up to the targets %v: %v (read %v)", target, ctx.Err(), read)
		}
		fs.EachError(func(_ string, part int32, err error) { t.Fatalf("fetch partition %d: %v", part, err) })
		fs.EachRecord(func(r *kgo.Record) { read[r.Partition] = max(read[r.Partition], r.Offset+1) })
	}
	for i := range snapshotEvery + 50 {
		earlier := map[int32]int64{}
		for part := range target {
			earlier[part] = int64(i % 100)
		}
		commitAsMember(ctx, t, member, topic, earlier)
	}
	commitAsMember(ctx, t, member, topic, target)

	adminTarget := map[int32]int64{}
	adminOffsets := kadm.Offsets{}
	for part := int32(0); part < partitions; part++ {
		adminTarget[part] = 10 + int64(part)
		adminOffsets.Add(kadm.Offset{Topic: topic, Partition: part, At: adminTarget[part], LeaderEpoch: -1})
	}
	committed, err := admin.CommitOffsets(ctx, adminGroup, adminOffsets)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatalf("commit through the admin API: %v", err)
	}

	// SIGKILL while the member is still in the group, right after the
	// acknowledgements.
	b.kill()
	abandon(member)
	if snaps := listSnapshots(t, dataDir); len(snaps) == 0 {
		t.Fatalf("no snapshot after %d commits: recovery would not go through one", snapshotEvery+50)
	}
	b = startBinary(t, dataDir, addr)

	admin = newRestartAdmin(t, addr)
	if got := fetchGroupOffsets(ctx, t, admin, group, topic); !maps.Equal(got, target) {
		t.Errorf("after SIGKILL and restart, group %s has committed offsets %v, want %v as committed by its member", group, got, target)
	}
	if got := fetchGroupOffsets(ctx, t, admin, adminGroup, topic); !maps.Equal(got, adminTarget) {
		t.Errorf("after SIGKILL and restart, group %s has committed offsets %v, want %v as committed through the admin API", adminGroup, got, adminTarget)
	}

	// A new member resumes at the committed offsets: it is reset to the
	// start only where nothing is committed, which is nowhere.
	resumed := newRestartMember(t, addr, topic, group)
	defer resumed.Close()
	next, first, ends := maps.Clone(target), map[int32]int64{}, map[int32]int64{}
	for part := int32(0); part < partitions; part++ {
		first[part], ends[part] = -1, perPart
	}
	for !reachedTargets(next, ends) {
		fs := resumed.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading to the end after the restart: %v (next offsets %v)", ctx.Err(), next)
		}
		fs.EachError(func(_ string, part int32, err error) { t.Fatalf("fetch partition %d: %v", part, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if first[r.Partition] < 0 {
				first[r.Partition] = r.Offset
			}
			if r.Offset != next[r.Partition] {
				t.Errorf("partition %d: read offset %d, want %d (resuming from the committed %d, dense and in order)",
					r.Partition, r.Offset, next[r.Partition], target[r.Partition])
			}
			if want := fmt.Sprintf("%d/%d", r.Partition, r.Offset); string(r.Value) != want {
				t.Errorf("partition %d offset %d: value %q, want %q", r.Partition, r.Offset, r.Value, want)
			}
			next[r.Partition] = r.Offset + 1
		})
	}
	if !maps.Equal(first, target) {
		t.Errorf("after the restart, the group's new member started at offsets %v, want the committed %v", first, target)
	}
	t.Logf("committed %v as a member and %v through the admin API; after SIGKILL and restart both were intact and the new member started at %v",
		target, adminTarget, first)
}

func newRestartAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// newRestartMember joins group with autocommit off, so that only explicit
// commits move the group's offsets, and reset to the start, so that a lost
// commit would show as reading from offset 0.
func newRestartMember(t *testing.T, addr, topic, group string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second), // Kafka's group.min.session.timeout.ms
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func reachedTargets(next, target map[int32]int64) bool {
	for part, off := range target {
		if next[part] < off {
			return false
		}
	}
	return true
}

// commitAsMember commits offsets with the member's id and generation, and
// fails the test unless every partition is acknowledged.
func commitAsMember(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, offsets map[int32]int64) {
	t.Helper()
	req := map[string]map[int32]kgo.EpochOffset{topic: {}}
	for part, off := range offsets {
		req[topic][part] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	acked := 0
	var failed error
	cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, creq *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			failed = err
			return
		}
		if creq.Generation < 0 || creq.MemberID == "" {
			failed = fmt.Errorf("commit was not sent as a group member: generation %d, member id %q", creq.Generation, creq.MemberID)
			return
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
					failed = fmt.Errorf("partition %d: %w", rp.Partition, perr)
					return
				}
				acked++
			}
		}
	})
	if failed != nil || acked != len(offsets) {
		t.Fatalf("commit %v as a member: %d of %d partitions acknowledged: %v", offsets, acked, len(offsets), failed)
	}
}

// abandon closes a member whose broker is dead without waiting for its
// leave, which cannot arrive.
func abandon(cl *kgo.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cl.LeaveGroupContext(ctx)
	cl.Close()
}

// listSnapshots lists the sequencer's snapshots in a data directory.
func listSnapshots(t *testing.T, dataDir string) []objectio.ObjectInfo {
	t.Helper()
	st, err := objectio.Open("dir://" + dataDir)
	if err != nil {
		t.Fatalf("open %s: %v", dataDir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snaps, err := objectio.ListAll(ctx, st, sequencer.SnapPrefix)
	if err != nil {
		t.Fatalf("list snapshots in %s: %v", dataDir, err)
	}
	return snaps
}

func fetchGroupOffsets(ctx context.Context, t *testing.T, admin *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	offs, err := admin.FetchOffsets(ctx, group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("fetch the committed offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic {
			out[o.Partition] = o.At
		}
	})
	return out
}
