package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/sluicedb/sluice/bench"
)

// loadgen produces a steady load against a running broker and prints the
// produce latency percentiles.
func loadgen(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := fs.String("topic", fmt.Sprintf("bench-%d", time.Now().Unix()), "topic to create and produce to")
	partitions := fs.Int("partitions", 8, "partitions of the topic")
	recordBytes := fs.Int("record-bytes", 1000, "value size")
	rate := fs.Int("rate-bytes", 2_000_000, "bytes per second to produce")
	duration := fs.Duration("duration", 10*time.Second, "how long to produce")
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	res, err := bench.RunLoad(context.Background(), bench.LoadConfig{
		Brokers: strings.Split(*brokers, ","), Topic: *topic, Partitions: int32(*partitions),
		RecordBytes: *recordBytes, RateBytesPerSec: *rate, Duration: *duration,
	})
	if err != nil {
		return err
	}
	fmt.Println(res)
	if res.Errors > 0 {
		return fmt.Errorf("%d records failed, first: %v", res.Errors, res.FirstError)
	}
	return nil
}
