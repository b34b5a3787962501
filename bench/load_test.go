package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

// TestLoadModesReadBackEverythingTheyProduce runs each mode of the load
// generator briefly against an in-process broker: what produce (with
// verification) and e2e acknowledge is read back whole, and consume then
// reads both topics again.
func TestLoadModesReadBackEverythingTheyProduce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker for a few seconds")
	}
	sa := startBrokerOn(t, objectio.NewMem(), server.Config{FlushWindow: 5 * time.Millisecond, AutoCreateTopics: true})
	ctx := context.Background()
	base := LoadConfig{Brokers: []string{sa.Addr()}, Partitions: 4, RecordBytes: 200, RateBytesPerSec: 500_000,
		Duration: 1500 * time.Millisecond, Clients: 2}

	var progress atomic.Int64
	cases := []LoadConfig{
		{Mode: ModeProduce, Topic: "produced", Verify: true},
		{Mode: ModeE2E, Topic: "e2e", Acks: "1", Compression: "zstd", Progress: func(p Progress) {
			if p.Produce != nil && p.Consume != nil {
				progress.Add(1)
			}
		}},
	}
	for _, c := range cases {
		cfg := base
		cfg.Mode, cfg.Topic, cfg.Verify, cfg.Acks, cfg.Compression, cfg.Progress = c.Mode, c.Topic, c.Verify, c.Acks, c.Compression, c.Progress
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.Mode, err)
		}
		if err := res.Err(); err != nil {
			t.Fatalf("%s: %v", c.Mode, err)
		}
		p, v := res.Produce, res.Verify
		if p.Records < 1000 || v.Records != p.Records || v.Acked != p.Records || v.Missing != 0 {
			t.Fatalf("%s: produced %d records (want ~3750), read back %d, %d acked, %d missing", c.Mode, p.Records, v.Records, v.Acked, v.Missing)
		}
		if c.Mode == ModeE2E && (res.Consume.Latency == nil || res.Consume.Latency.Count != uint64(p.Records)) {
			t.Fatalf("e2e: want an end-to-end latency for each of %d records, got %+v", p.Records, res.Consume.Latency)
		}
	}
	if progress.Load() == 0 {
		t.Error("e2e ran 1.5 s without a progress report of both sides")
	}
	for _, topic := range []string{"produced", "e2e"} {
		res, err := Run(ctx, LoadConfig{Mode: ModeConsume, Brokers: base.Brokers, Topic: topic, Consumers: 3})
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Err(); err != nil || res.Verify.Records < 1000 || res.Verify.Writers != 2 {
			t.Fatalf("consume %s: %v, %v", topic, err, res.Verify)
		}
	}
}
