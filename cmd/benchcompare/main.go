// Command benchcompare runs one load, on one machine, against several
// brokers one after the other: kfake (franz-go's in-memory fake broker, the
// peer), `sluice serve` on the mem store, on the dir store and on a local
// MinIO, and a sequencer with two agents. Each broker is a process of its
// own, started on a free port and stopped afterwards. For each it measures
//
//   - produce MB/s at the maximum rate, and consume MB/s reading it all
//     back (with every record verified: count, checksum, order);
//   - produce latency p50 and p99 at a fixed rate;
//   - the broker's CPU seconds (utime+stime from /proc) per GB produced and
//     consumed in the first two, and its peak RSS;
//
// and prints a markdown table. Run it from the module root (it builds the
// binaries with `go build` unless given them):
//
//	go run ./cmd/benchcompare
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/bench"
	"github.com/sluicedb/sluice/objectio/s3server"
	"github.com/sluicedb/sluice/server"
)

// config is the load every broker gets.
type config struct {
	partitions   int
	recordBytes  int
	clients      int
	duration     time.Duration // of the max-rate produce
	maxBytes     int64         // cap on the max-rate produce
	rateBytes    int           // of the fixed-rate produce
	rateDuration time.Duration
	verbose      bool
}

func main() {
	var c config
	flag.IntVar(&c.partitions, "partitions", 8, "partitions of each topic")
	flag.IntVar(&c.recordBytes, "record-bytes", 1024, "value size")
	flag.IntVar(&c.clients, "clients", 4, "franz-go producers (and consumers)")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long the max-rate produce runs")
	flag.Int64Var(&c.maxBytes, "max-bytes", 4e9, "stop the max-rate produce after this many bytes (the brokers keep it in memory)")
	flag.IntVar(&c.rateBytes, "rate-bytes", 2_000_000, "bytes per second of the fixed-rate produce (its latency goes in the table)")
	flag.DurationVar(&c.rateDuration, "rate-duration", 10*time.Second, "how long the fixed-rate produce runs")
	flag.BoolVar(&c.verbose, "v", false, "print the load generator's progress lines")
	only := flag.String("brokers", "kfake,sluice-mem,sluice-dir,sluice-minio,sluice-2agents", "which brokers to run, in order (sluice-minio: a MinIO server on this machine is the store, skipped if MinIO is not installed; sluice-2agents: a sequencer and 2 agents behind a balancer, dir store)")
	sluiceFlags := flag.String("sluice-flags", "", "extra flags for `sluice serve`, space-separated (e.g. \"--flush-window 50ms\")")
	sluiceBin := flag.String("sluice-bin", "", "a built sluice binary (default: go build ./cmd/sluice)")
	kfakeBin := flag.String("kfake-bin", "", "a built kfake binary (default: go build ./bench/cmd/kfake)")
	goCmd := flag.String("go", "go", "the go command, for building")
	jsonOut := flag.Bool("json", false, "print the rows as JSON on stdout (the table goes to stderr)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := compare(ctx, c, *only, strings.Fields(*sluiceFlags), *sluiceBin, *kfakeBin, *goCmd, *jsonOut); err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

func compare(ctx context.Context, c config, only string, sluiceFlags []string, sluiceBin, kfakeBin, goCmd string, jsonOut bool) error {
	var specs []brokerSpec
	all := brokerSpecs(sluiceFlags)
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(all, func(s brokerSpec) bool { return s.name == name })
		if i < 0 {
			return fmt.Errorf("unknown broker %q (have kfake, sluice-mem, sluice-dir, sluice-minio, sluice-2agents)", name)
		}
		specs = append(specs, all[i])
	}
	tmp, err := os.MkdirTemp("", "benchcompare-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bins, err := build(ctx, goCmd, tmp, sluiceBin, kfakeBin)
	if err != nil {
		return err
	}
	var rows []row
	for _, spec := range specs {
		fmt.Fprintf(os.Stderr, "benchcompare: %s…\n", spec.name)
		r := measure(ctx, c, spec, bins)
		if r.Skipped != "" {
			fmt.Fprintf(os.Stderr, "benchcompare: %s skipped: %s\n", spec.name, r.Skipped)
		}
		if r.Err != "" {
			fmt.Fprintf(os.Stderr, "benchcompare: %s: %s\n", spec.name, r.Err)
		}
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	table := io.Writer(os.Stdout)
	if jsonOut {
		table = os.Stderr
	}
	writeTable(table, c, rows, sluiceFlags)
	if jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.Err != "" {
			return fmt.Errorf("%s: %s", r.Broker, r.Err)
		}
	}
	return nil
}

// build builds whichever binaries were not given, into dir.
func build(ctx context.Context, goCmd, dir, sluiceBin, kfakeBin string) (binaries, error) {
	b := binaries{sluice: sluiceBin, kfake: kfakeBin}
	for _, t := range []struct {
		bin *string
		pkg string
	}{{&b.sluice, "./cmd/sluice"}, {&b.kfake, "./bench/cmd/kfake"}} {
		if *t.bin != "" {
			continue
		}
		*t.bin = filepath.Join(dir, filepath.Base(t.pkg))
		cmd := exec.CommandContext(ctx, goCmd, "build", "-o", *t.bin, t.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return b, fmt.Errorf("go build %s (run benchcompare from the module root): %w", t.pkg, err)
		}
	}
	return b, nil
}

// row is one broker's measurements.
type row struct {
	Broker      string  `json:"broker"`
	ProduceMBps float64 `json:"produce_mb_per_s"`
	ConsumeMBps float64 `json:"consume_mb_per_s"`
	// The fixed-rate produce: the rate it achieved and its latency.
	RateMBps float64 `json:"rate_mb_per_s"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	// CPU of the broker process over the max-rate produce and the read-back.
	CPUSeconds  float64 `json:"cpu_seconds"`
	GB          float64 `json:"gb_produced_and_consumed"`
	CPUSecPerGB float64 `json:"cpu_seconds_per_gb"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// Verified says what reading back found, in words.
	Verified string `json:"verified"`
	Err      string `json:"error,omitempty"`
	// Skipped says why the broker did not run: a store server this
	// machine does not have.
	Skipped string `json:"skipped,omitempty"`
}

// measure starts spec's broker, runs the load against it and stops it.
func measure(ctx context.Context, c config, spec brokerSpec, bins binaries) row {
	r := row{Broker: spec.name}
	p, err := startBroker(ctx, spec, bins)
	if errors.Is(err, s3server.ErrNotInstalled) {
		r.Skipped = err.Error()
		return r
	}
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer p.stop()
	load := bench.LoadConfig{
		Brokers: []string{p.addr}, Partitions: int32(c.partitions), RecordBytes: c.recordBytes,
		Clients: c.clients, Verify: true,
	}
	if c.verbose {
		load.Progress = func(pr bench.Progress) { fmt.Fprintf(os.Stderr, "%s %v\n", spec.name, pr) }
	}

	cpuBefore, err := procsCPU(p.pids())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	maxLoad := load
	maxLoad.Topic, maxLoad.Duration, maxLoad.MaxBytes = "compare-max", c.duration, c.maxBytes
	res, err := bench.Run(ctx, maxLoad)
	if err != nil {
		r.Err = fmt.Sprintf("max-rate produce: %v", err)
		return r
	}
	cpuAfter, err := procsCPU(p.pids())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.ProduceMBps, r.ConsumeMBps = res.Produce.MBps, res.Consume.MBps
	r.GB = float64(res.Produce.Bytes+res.Consume.Bytes) / 1e9
	r.CPUSeconds = (cpuAfter - cpuBefore).Seconds()
	r.CPUSecPerGB = r.CPUSeconds / max(r.GB, 1e-9)
	r.Verified = verdict(res)

	rateLoad := load
	rateLoad.Topic, rateLoad.Duration, rateLoad.RateBytesPerSec = "compare-rate", c.rateDuration, c.rateBytes
	rres, err := bench.Run(ctx, rateLoad)
	if err != nil {
		r.Err = fmt.Sprintf("fixed-rate produce: %v", err)
		return r
	}
	r.RateMBps, r.P50ms, r.P99ms = rres.Produce.MBps, rres.Produce.Latency.P50ms, rres.Produce.Latency.P99ms
	if v := verdict(rres); v != "ok" {
		r.Verified += "; fixed rate: " + v
	}
	if rss, err := procsPeakRSS(p.pids()); err == nil {
		r.PeakRSSMiB = float64(rss) / (1 << 20)
	}
	if err := res.Err(); err != nil {
		r.Err = err.Error()
	} else if err := rres.Err(); err != nil {
		r.Err = err.Error()
	}
	return r
}

// verdict says in a few words what reading a run back found.
func verdict(res *bench.Result) string {
	if err := res.Err(); err != nil {
		return "FAILED: " + err.Error()
	}
	return "ok"
}

func writeTable(w io.Writer, c config, rows []row, sluiceFlags []string) {
	fmt.Fprintf(w, "\nbench-compare, %s, %d CPUs, %s\n\n", time.Now().Format(time.DateTime), runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(w, "Load: %d-byte records, %d partitions, %d producers (acks=all, idempotent, no compression); max rate for %v (at most %.1f GB), read back by %d consumers; then %.1f MB/s for %v.",
		c.recordBytes, c.partitions, c.clients, c.duration, float64(c.maxBytes)/1e9, c.clients, float64(c.rateBytes)/1e6, c.rateDuration)
	if len(sluiceFlags) > 0 {
		fmt.Fprintf(w, " sluice serve flags: `%s`.", strings.Join(sluiceFlags, " "))
	}
	fmt.Fprintf(w, " CPU is the broker processes' utime+stime over the max-rate produce and the read-back, per GB produced plus consumed; for sluice-minio it leaves out MinIO's, which shares the machine.\n\n")
	fmt.Fprintf(w, "| broker | produce MB/s | consume MB/s | p50 ms @ %.0f MB/s | p99 ms @ %.0f MB/s | CPU-s/GB | peak RSS MiB | read back |\n",
		float64(c.rateBytes)/1e6, float64(c.rateBytes)/1e6)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		if r.Skipped != "" {
			fmt.Fprintf(w, "| %s | – | – | – | – | – | – | skipped: %s |\n", r.Broker, oneLine(r.Skipped))
			continue
		}
		if r.Err != "" && r.ProduceMBps == 0 {
			fmt.Fprintf(w, "| %s | – | – | – | – | – | – | error: %s |\n", r.Broker, oneLine(r.Err))
			continue
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f | %s |\n",
			r.Broker, r.ProduceMBps, r.ConsumeMBps, r.P50ms, r.P99ms, r.CPUSecPerGB, r.PeakRSSMiB, oneLine(r.Verified))
	}
	ref := slices.IndexFunc(rows, func(r row) bool { return r.Broker == "kfake" && r.Err == "" })
	if ref < 0 || len(rows) < 2 {
		return
	}
	k := rows[ref]
	fmt.Fprintln(w, "\nRelative to kfake (targets: produce and consume ≥ 1.0×, CPU-s/GB ≤ 0.5×):")
	fmt.Fprintln(w, "\n| broker | produce × | consume × | CPU-s/GB × |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rows {
		if r.Broker == "kfake" || r.ProduceMBps == 0 {
			continue
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f |\n", r.Broker,
			r.ProduceMBps/k.ProduceMBps, r.ConsumeMBps/k.ConsumeMBps, r.CPUSecPerGB/k.CPUSecPerGB)
	}
	if i := slices.IndexFunc(rows, func(r row) bool { return r.Broker == "sluice-dir" && r.Err == "" }); i >= 0 {
		// The RSS target set for the agent (issue 7), not its Go memory
		// limit (server.Config.MemoryBudget, which sits below it).
		target := float64(server.DefaultCacheBytes+4*server.DefaultFlushBytes)/(1<<20) + 128
		fmt.Fprintf(w, "\nAgent memory, target RSS ≤ cache + 4 × flush bytes + 128 MiB = %.0f MiB with the default flags: sluice-dir peaked at %.0f MiB (%.2f×). "+
			"On mem the stored data is in the agent's heap, and sluice-2agents sums three processes.\n", target, rows[i].PeakRSSMiB, rows[i].PeakRSSMiB/target)
	}
}

// cellMax bounds a table cell; the whole error is on stderr.
const cellMax = 160

// oneLine fits s into a table cell: its first line, shortened.
func oneLine(s string) string {
	s, _, cut := strings.Cut(s, "\n")
	if r := []rune(s); len(r) > cellMax {
		s, cut = string(r[:cellMax]), true
	}
	if cut {
		s += " … (see stderr)"
	}
	return strings.ReplaceAll(s, "|", "/")
}
