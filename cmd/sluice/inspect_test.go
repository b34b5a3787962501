package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

func TestInspectShowsTheLogAndTheIndex(t *testing.T) {
	store := objectio.NewMem()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa, err := server.StartStandalone(ctx, store, "127.0.0.1:0", server.Config{FlushWindow: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x"), Partition: 0}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	sa.Close(ctx)

	var out bytes.Buffer
	if err := inspectStore(ctx, &out, store, "orders", 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"epoch 1 by", "create topic orders (2 partitions)", "1× batch", "orders: 2 partitions", "partition 0: offsets [0, 3)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out.String())
		}
	}
}
