package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// LoadConfig describes a produce load: records of RecordBytes at
// RateBytesPerSec for Duration, spread over Partitions of Topic.
type LoadConfig struct {
	Brokers         []string
	Topic           string
	Partitions      int32
	RecordBytes     int
	RateBytesPerSec int
	Duration        time.Duration
}

// LoadResult is what the load measured: per-record produce latency, from
// the client's Produce call to its acknowledgement.
type LoadResult struct {
	Records, Errors    int
	Bytes              int64
	Elapsed            time.Duration
	P50, P90, P99, Max time.Duration
	FirstError         error
}

func (r LoadResult) String() string {
	return fmt.Sprintf("%d records (%.2f MB) in %v, %.2f MB/s, %d errors; produce latency p50 %v p90 %v p99 %v max %v",
		r.Records, float64(r.Bytes)/1e6, r.Elapsed.Round(time.Millisecond), float64(r.Bytes)/1e6/r.Elapsed.Seconds(), r.Errors,
		r.P50.Round(time.Millisecond), r.P90.Round(time.Millisecond), r.P99.Round(time.Millisecond), r.Max.Round(time.Millisecond))
}

// RunLoad produces at a steady rate with franz-go (idempotent, its
// defaults) and measures every record's latency.
func RunLoad(ctx context.Context, cfg LoadConfig) (LoadResult, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return LoadResult{}, err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, cfg.Partitions, 1, nil, cfg.Topic); err != nil {
		return LoadResult{}, fmt.Errorf("create topic %s: %w", cfg.Topic, err)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		res       LoadResult
		wg        sync.WaitGroup
	)
	// Values are random windows of a large random pool: the client
	// compresses (snappy by default), and repeated values would shrink
	// every object to nothing.
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, 16<<20)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	const tick = 10 * time.Millisecond
	perTick := float64(cfg.RateBytesPerSec) * tick.Seconds() / float64(cfg.RecordBytes)
	start := time.Now()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	owed := 0.0
	for time.Since(start) < cfg.Duration {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-ticker.C:
		}
		owed += perTick
		for ; owed >= 1; owed-- {
			wg.Add(1)
			off := rng.IntN(len(pool) - cfg.RecordBytes)
			value := pool[off : off+cfg.RecordBytes]
			sent := time.Now()
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				d := time.Since(sent)
				mu.Lock()
				defer mu.Unlock()
				defer wg.Done()
				if err != nil {
					res.Errors++
					if res.FirstError == nil {
						res.FirstError = err
					}
					return
				}
				latencies = append(latencies, d)
				res.Bytes += int64(len(value))
			})
		}
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	res.Records = len(latencies)
	if n := len(latencies); n > 0 {
		res.P50, res.P90, res.P99, res.Max = latencies[n/2], latencies[n*90/100], latencies[n*99/100], latencies[n-1]
	}
	return res, nil
}
