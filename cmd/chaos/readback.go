package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// endOffsets returns each partition's high watermark, retrying until every
// partition answers or ctx ends.
func endOffsets(ctx context.Context, adm *kadm.Client, partitions int32) (map[int32]int64, error) {
	var last error
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		listed, err := adm.ListEndOffsets(rctx, topicName)
		cancel()
		if err == nil {
			err = listed.Error()
		}
		if err == nil {
			hwm := map[int32]int64{}
			listed.Each(func(o kadm.ListedOffset) { hwm[o.Partition] = o.Offset })
			if int32(len(hwm)) == partitions {
				return hwm, nil
			}
			err = fmt.Errorf("%d of %d partitions listed", len(hwm), partitions)
		}
		last = err
		sleepCtx(ctx, 250*time.Millisecond)
	}
	return nil, fmt.Errorf("listing end offsets: %v (last error: %v)", ctx.Err(), last)
}

// readBack reads every partition from offset 0 up to its high watermark
// with a fresh client that belongs to no group. A record whose value is not
// the one produced under its key is reported under a name no producer
// sends, so the checker flags it. If ctx ends first, what was read is
// returned with, for each unfinished partition, the offset it got to, and
// an error saying so.
func readBack(ctx context.Context, opts []kgo.Opt, hwm map[int32]int64) ([]Read, map[int32]int64, error) {
	start := map[int32]kgo.Offset{}
	next := map[int32]int64{} // the offset after the last one read
	for p, end := range hwm {
		if end > 0 {
			start[p] = kgo.NewOffset().At(0)
			next[p] = 0
		}
	}
	if len(start) == 0 {
		return nil, nil, nil
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicName: start}),
		kgo.FetchMaxWait(500*time.Millisecond))...)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()

	var reads []Read
	done := func() bool {
		for p, n := range next {
			if n < hwm[p] {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= hwm[r.Partition] {
				return // written after the watermark was taken; not judged
			}
			id := string(r.Key)
			if string(r.Value) != string(recordValue(id)) {
				id = fmt.Sprintf("(value %.40q under key %q)", r.Value, r.Key)
			}
			reads = append(reads, Read{ID: id, Position: Position{r.Partition, r.Offset}})
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	if done() {
		return reads, nil, nil
	}
	readTo := map[int32]int64{}
	var short []string
	for _, p := range slices.Sorted(maps.Keys(next)) {
		if next[p] < hwm[p] {
			readTo[p] = next[p]
			short = append(short, fmt.Sprintf("partition %d at %d of %d", p, next[p], hwm[p]))
		}
	}
	return reads, readTo, fmt.Errorf("read-back stopped short after %v: %s", readBackTimeout, strings.Join(short, ", "))
}
