package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/node"
)

// inspect prints the metadata log (snapshots, entries, epochs) and, with
// -topic, that topic's partition index. It only reads the store.
func inspect(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	store := fs.String("store", "dir://./sluice-data", "object store to read")
	topic := fs.String("topic", "", "print this topic's partition index")
	entries := fs.Int("entries", 20, "print the last N log entries (0: none)")
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	st, err := objectio.Open(*store)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return inspectStore(ctx, os.Stdout, st, *topic, *entries)
}

func inspectStore(ctx context.Context, w io.Writer, st objectio.Store, topic string, last int) error {
	snaps, err := objectio.ListAll(ctx, st, sequencer.SnapPrefix)
	if err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	fmt.Fprintf(w, "snapshots: %d", len(snaps))
	if n := len(snaps); n > 0 {
		fmt.Fprintf(w, " (newest %s, %d bytes)", snaps[n-1].Key, snaps[n-1].Size)
	}
	fmt.Fprintln(w)

	// Recover a state exactly as a sequencer would, without taking over.
	seq := sequencer.New(sequencer.Config{Writer: "inspect"})
	next, err := node.Recover(ctx, st, seq)
	if err != nil {
		return err
	}
	state := seq.State()
	fmt.Fprintf(w, "log: %d entries; epoch %d owned by %s (addr %q)\n", next-1, state.Epoch.Epoch, state.Epoch.Owner, state.Epoch.Addr)
	if last > 0 {
		from := uint64(1)
		if next > uint64(last) {
			from = next - uint64(last)
		}
		for i := from; i < next; i++ {
			data, err := st.Get(ctx, sequencer.LogKey(i), 0, -1)
			if errors.Is(err, objectio.ErrNotFound) {
				continue // before the newest snapshot, entries may be collected
			}
			if err != nil {
				return err
			}
			e, err := sequencer.UnmarshalEntry(data)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "  %s  writer %-28s %s\n", sequencer.LogKey(i), e.Writer, describeOps(e.Ops))
		}
	}
	fmt.Fprintf(w, "topics: %d; groups with offsets: %d; next producer id %d\n", len(state.Topics), len(state.Groups), state.NextProducerID)
	for _, name := range state.TopicNames() {
		t := state.Topics[name]
		var hwm []string
		for _, p := range t.Partitions {
			hwm = append(hwm, fmt.Sprint(p.Next))
		}
		fmt.Fprintf(w, "  %s: %d partitions, high watermarks [%s]\n", name, len(t.Partitions), strings.Join(hwm, " "))
	}
	if topic == "" {
		return nil
	}
	t := state.Topics[topic]
	if t == nil {
		return fmt.Errorf("no topic %q", topic)
	}
	for i, p := range t.Partitions {
		fmt.Fprintf(w, "partition %d: offsets [%d, %d), %d batches\n", i, p.LogStart, p.Next, len(p.Index))
		for _, e := range p.Index {
			fmt.Fprintf(w, "  offsets %d..%d  %s @%d+%d  max timestamp %d\n", e.BaseOffset, e.LastOffset(), e.Object, e.Pos, e.Len, e.MaxTimestamp)
		}
	}
	return nil
}

// describeOps summarises an entry's ops: "epoch 3; 12 batches; 1 commit".
func describeOps(ops []sequencer.Op) string {
	counts := map[string]int{}
	var order []string
	add := func(kind string) {
		if counts[kind] == 0 {
			order = append(order, kind)
		}
		counts[kind]++
	}
	var parts []string
	for _, op := range ops {
		switch {
		case op.Epoch != nil:
			parts = append(parts, fmt.Sprintf("epoch %d by %s", op.Epoch.Epoch, op.Epoch.Owner))
		case op.Batch != nil:
			add("batch")
		case op.CreateTopic != nil:
			parts = append(parts, fmt.Sprintf("create topic %s (%d partitions)", op.CreateTopic.Name, op.CreateTopic.Partitions))
		case op.DeleteTopic != nil:
			parts = append(parts, "delete topic "+op.DeleteTopic.Name)
		case op.CreatePartitions != nil:
			parts = append(parts, fmt.Sprintf("grow %s to %d partitions", op.CreatePartitions.Name, op.CreatePartitions.Count))
		case op.InitProducer != nil:
			add("producer id")
		case op.OffsetCommit != nil:
			add("offset commit")
		case op.DeleteGroup != nil:
			parts = append(parts, "delete group "+op.DeleteGroup.Group)
		case op.OffsetDelete != nil:
			add("offset delete")
		}
	}
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[k], k))
	}
	return strings.Join(parts, "; ")
}
