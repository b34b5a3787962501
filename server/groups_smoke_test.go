package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestGroupConsumesAndCommits(t *testing.T) {
	sa := startBroker(t, nil, Config{GroupInitialRebalanceDelay: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := kadm.NewClient(p).CreateTopic(ctx, 4, 1, nil, "g"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		p.Produce(ctx, kgo.StringRecord(fmt.Sprint(i)), nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.ConsumerGroup("grp"), kgo.ConsumeTopics("g"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < 100 {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	offs, err := kadm.NewClient(p).FetchOffsets(ctx, "grp")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != 100 {
		t.Fatalf("committed offsets sum to %d, want 100", sum)
	}
}
