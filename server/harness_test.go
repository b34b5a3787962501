package server

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio"
)

// topicProducer is a franz-go client producing to topic on addr, creating
// it if missing; it is closed at the end of the test.
func topicProducer(t testing.TB, addr, topic string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// startBroker runs `sluice serve` in process on a free port and stops it at
// the end of the test.
func startBroker(t testing.TB, store objectio.Store, cfg Config) *Standalone {
	t.Helper()
	if store == nil {
		store = objectio.NewMem()
	}
	if cfg.FlushWindow == 0 {
		cfg.FlushWindow = 5 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sa, err := StartStandalone(ctx, store, "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sa.Close(ctx)
	})
	return sa
}
