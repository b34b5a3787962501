package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/bench"
)

const benchUsage = `usage: sluice bench [produce|consume|e2e] [flags]

  produce  produce for --duration and print produce latency (the default;
           --verify reads it all back and checks it)
  consume  read --topic from its start to its end as fast as possible
  e2e      produce and consume at once; print end-to-end latency

Every record's value carries its writer, a sequence number, its send time
and a CRC-32C, so what is read back is checked: counts, checksums, and
order per writer within each partition.
`

// loadgen is 'sluice bench': a load generator on franz-go.
func loadgen(args []string) error {
	cfg, out, err := parseBench(args)
	if err != nil {
		return err
	}
	if !out.quiet {
		cfg.Progress = func(p bench.Progress) { fmt.Fprintln(os.Stderr, p) }
	}
	// Ctrl-C ends the run early; it still reports what it did.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	if cfg.Mode != bench.ModeConsume {
		fmt.Fprintf(os.Stderr, "%s: topic %s, partitions=%d record-bytes=%d clients=%d rate=%s duration=%v\n",
			cfg.Mode, cfg.Topic, cfg.Partitions, cfg.RecordBytes, cfg.Clients, rateFlagText(cfg.RateBytesPerSec), cfg.Duration)
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	var text io.Writer = os.Stdout
	if out.json {
		text = os.Stderr
	}
	fmt.Fprintln(text)
	res.WriteText(text)
	if out.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return res.Err()
}

// benchOutput is how loadgen reports.
type benchOutput struct{ json, quiet bool }

// parseBench reads 'sluice bench' arguments: an optional subcommand
// (produce when there is none, as before there were subcommands), then flags.
func parseBench(args []string) (bench.LoadConfig, benchOutput, error) {
	mode := bench.ModeProduce
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode = bench.Mode(args[0])
		args = args[1:]
		switch mode {
		case bench.ModeProduce, bench.ModeConsume, bench.ModeE2E:
		default:
			return bench.LoadConfig{}, benchOutput{}, fmt.Errorf("bench: unknown subcommand %q\n\n%s", mode, benchUsage)
		}
	}
	fs := flag.NewFlagSet("bench "+string(mode), flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	defaultTopic := fmt.Sprintf("bench-%d", time.Now().Unix())
	if mode == bench.ModeConsume {
		defaultTopic = ""
	}
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated seed brokers")
	topic := fs.String("topic", defaultTopic, "topic (produce and e2e create it unless it exists)")
	partitions := fs.Int("partitions", 8, "partitions of a topic the run creates")
	recordBytes := fs.Int("record-bytes", 1000, fmt.Sprintf("value size (at least %d)", bench.HeaderBytes))
	rate := fs.Int("rate-bytes", 2_000_000, "bytes per second to produce, over all clients; 0 is as fast as possible")
	clients := fs.Int("clients", 1, "franz-go clients producing (each one a writer)")
	consumers := fs.Int("consumers", 0, "franz-go clients consuming, over disjoint partitions (0: as many as --clients)")
	duration := fs.Duration("duration", 10*time.Second, "how long to produce; for consume, the most time to take (0: until the end)")
	maxBytes := fs.Int64("max-bytes", 0, "stop producing after this many bytes (0: no limit)")
	acks := fs.String("acks", "all", "all (idempotent), 1 or 0 (both not idempotent: franz-go's idempotence requires all)")
	compression := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	linger := fs.Duration("linger", 0, "franz-go ProducerLinger")
	verify := fs.Bool("verify", false, "produce: read everything back afterwards and check it")
	jsonOut := fs.Bool("json", false, "print a JSON summary on stdout (the text goes to stderr)")
	quiet := fs.Bool("quiet", false, "no progress line each second")
	if err := parseWithEnv(fs, args); err != nil {
		return bench.LoadConfig{}, benchOutput{}, err
	}
	if fs.NArg() > 0 {
		return bench.LoadConfig{}, benchOutput{}, fmt.Errorf("bench: unexpected arguments %q", fs.Args())
	}
	if *topic == "" {
		return bench.LoadConfig{}, benchOutput{}, errors.New("bench: --topic is required")
	}
	if mode == bench.ModeConsume && !isFlagSet(fs, "duration") {
		*duration = 0
	}
	cfg := bench.LoadConfig{
		Mode: mode, Brokers: strings.Split(*brokers, ","), Topic: *topic, Partitions: int32(*partitions),
		RecordBytes: *recordBytes, RateBytesPerSec: *rate, Duration: *duration, Clients: *clients, Consumers: *consumers,
		Acks: *acks, Compression: *compression, Linger: *linger, MaxBytes: *maxBytes, Verify: *verify,
	}
	return cfg, benchOutput{json: *jsonOut, quiet: *quiet}, nil
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set || os.Getenv("SLUICE_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))) != ""
}

func rateFlagText(bytesPerSec int) string {
	if bytesPerSec <= 0 {
		return "max"
	}
	return fmt.Sprintf("%.2f MB/s", float64(bytesPerSec)/1e6)
}
