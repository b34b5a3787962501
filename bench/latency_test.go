package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

// BenchmarkProduceLatencyS3Like produces 2 MB/s for 10 s through a broker
// whose store adds 30–70 ms to every request (an S3-like round trip), with
// the default 250 ms flush window, and reports produce latency percentiles
// next to the floor of window/2 + two store round trips (data PUT, then log
// PUT). Then a fresh broker on the same store (cold cache) consumes it all,
// and the store requests per MB produced and fetched are reported.
//
//	go test ./bench -run '^$' -bench ProduceLatencyS3Like -benchtime 1x
func BenchmarkProduceLatencyS3Like(b *testing.B) {
	if testing.Short() {
		b.Skip("produces for 10 s at a fixed rate; skipped with -short")
	}
	for i := 0; i < b.N; i++ {
		mem := objectio.NewMem()
		counting := &objectio.Counting{Inner: mem}
		faulty, err := objectio.WrapFaulty(counting, objectio.FaultyConfig{Latency: "30ms-70ms", Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		ctx := context.Background()
		sa, err := server.StartStandalone(ctx, faulty, "127.0.0.1:0", server.Config{FlushWindow: 250 * time.Millisecond, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		putsBefore := counting.Puts.Load()
		res, err := Run(ctx, LoadConfig{Brokers: []string{sa.Addr()}, Topic: "latency", Partitions: 8,
			RecordBytes: 1000, RateBytesPerSec: 2_000_000, Duration: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Err(); err != nil {
			b.Fatal(err)
		}
		prod := res.Produce
		puts := counting.Puts.Load() - putsBefore
		closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sa.Close(closeCtx)
		cancel()

		// A fresh broker on the same store: every fetch misses the cache.
		sa2, err := server.StartStandalone(ctx, faulty, "127.0.0.1:0", server.Config{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		getsBefore, bytesBefore := counting.Gets.Load(), counting.GetBytes.Load() // after recovery's log reads
		fetched := consumeAll(b, sa2.Addr(), "latency", prod.Records)
		gets, getBytes := counting.Gets.Load()-getsBefore, counting.GetBytes.Load()-bytesBefore
		closeCtx, cancel = context.WithTimeout(ctx, 10*time.Second)
		sa2.Close(closeCtx)
		cancel()

		mb := float64(prod.Bytes) / 1e6
		b.ReportMetric(prod.Latency.P50ms, "p50-ms")
		b.ReportMetric(prod.Latency.P99ms, "p99-ms")
		b.ReportMetric(float64(puts)/mb, "PUTs/MB-produced")
		b.ReportMetric(float64(gets)/(float64(fetched)/1e6), "GETs/MB-fetched")
		b.Logf("produce: %v; latency %v", prod, prod.Latency)
		b.Logf("floor: window/2 + 2 round trips = 125ms + 2×(30..70ms) = 185..265ms (mean 225ms)")
		b.Logf("store: %d PUTs for %.1f MB produced; %d GETs (%.1f MB) for %.1f MB fetched", puts, mb, gets, float64(getBytes)/1e6, float64(fetched)/1e6)
	}
}

// consumeAll reads n records of topic from the start and returns their bytes.
func consumeAll(b *testing.B, addr, topic string, n int64) int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got, bytes int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("consumed %d of %d records", got, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	return bytes
}
