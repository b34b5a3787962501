package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLongPollEndsWhenTheAgentCloses: a fetch waiting for data is answered
// when its agent closes, not at the end of its wait (until then it spun a
// core, its agent's context being done on every pass of the wait).
func TestLongPollEndsWhenTheAgentCloses(t *testing.T) {
	const wait = 20 * time.Second
	sa := startBroker(t, nil, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "waiting"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait/time.Millisecond), 1<<20, 1<<20
	topic := kmsg.NewFetchRequestTopic()
	topic.Topic = "waiting"
	part := kmsg.NewFetchRequestTopicPartition()
	part.PartitionMaxBytes = 1 << 20
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)

	answered := make(chan time.Time, 1)
	go func() {
		_, _ = cl.Broker(0).Request(ctx, req) // an answer or a closed connection
		answered <- time.Now()
	}()
	time.Sleep(500 * time.Millisecond) // most likely parked by now; if not, it arrives at a closed agent
	closed := time.Now()
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	sa.Agent.Close(cctx)
	ccancel()
	select {
	case at := <-answered:
		t.Logf("fetch ended %v after the agent closed", at.Sub(closed).Round(time.Millisecond))
	case <-time.After(wait / 2):
		t.Fatalf("a fetch waiting for data was still waiting %v after its agent closed", wait/2)
	}
}
