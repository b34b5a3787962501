package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSmokeFranz(t *testing.T) {
	sa := startBroker(t, nil, Config{AutoCreateTopics: true, DefaultPartitions: 2})
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("smoke"), kgo.ConsumeTopics("smoke"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for n < 100 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
}
