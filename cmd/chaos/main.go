// Command chaos is the live chaos test: it runs a real Sluice cluster (MinIO,
// two standby sequencers, three agents behind a TCP load balancer) as
// separate processes, drives idempotent producers and a consumer group
// through it, SIGKILLs agents and the active sequencer throughout, and then
// checks the history: every acknowledged record is in the log at its
// acknowledged offset, exactly once, offsets are dense, and the group's
// committed offsets never go back.
//
//	go run ./cmd/chaos -duration 2m
//
// The first 80% of the run has faults (the safety phase); the rest has none
// (the liveness phase); after it every record sent must be acknowledged,
// and the consumer group must have committed up to the end of the log,
// within -drain. Exit status: 0 clean, 1 violations, 2 the
// run could not be set up or was interrupted. Each process's log is in a
// directory printed at the end and kept on failure.
//
// Real processes and real time: a seed fixes which processes are killed and
// the delays, not the interleaving, so it does not replay a run exactly.
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/objectio/s3server"
)

const (
	exitClean      = 0
	exitViolations = 1
	exitSetup      = 2

	// livenessShare is the fraction of the run, at its end, without faults.
	livenessShare = 0.2
	// readBackTimeout bounds the final read of the whole topic.
	readBackTimeout = 2 * time.Minute
	// progressEvery spaces the progress lines.
	progressEvery = 10 * time.Second
	// crashRestartDelay is how long a process that exited by itself stays
	// down before it is restarted, as a supervisor would.
	crashRestartDelay = time.Second
	// violationsShownPerKind bounds the summary's list; the rest are counted.
	violationsShownPerKind = 10
)

type options struct {
	duration   time.Duration
	seed       uint64
	sluice     string
	verbose    bool
	mode       string
	rate       int
	producers  int
	consumers  int
	partitions int
	drain      time.Duration
	lease      time.Duration
	flush      time.Duration
	keep       bool
}

func parseFlags() options {
	var o options
	flag.DurationVar(&o.duration, "duration", 2*time.Minute, "length of the run: faults for the first 80%, none for the rest")
	flag.Uint64Var(&o.seed, "seed", 0, "seed for which process is killed when and for how long (0: from the clock)")
	flag.StringVar(&o.sluice, "sluice", "", "a prebuilt sluice binary (default: go build ./cmd/sluice into the run directory)")
	flag.BoolVar(&o.verbose, "v", false, "print every event (starts, kills, failovers) as it happens")
	flag.StringVar(&o.mode, "mode", modeDistributed, "distributed (2 sequencers, 3 agents) or serve (one `sluice serve`, killed as an agent)")
	flag.IntVar(&o.rate, "rate", 200, "records per second per producer")
	flag.IntVar(&o.producers, "producers", 4, "idempotent producers")
	flag.IntVar(&o.consumers, "consumers", 3, "members of the consumer group")
	flag.IntVar(&o.partitions, "partitions", 8, "partitions of the topic")
	flag.DurationVar(&o.drain, "drain", 60*time.Second, "liveness bound: after the run, every record in flight must be acknowledged, and the group caught up, within this")
	flag.DurationVar(&o.lease, "lease", 0, "the sequencers' --lease (0: their default)")
	flag.DurationVar(&o.flush, "flush-window", 50*time.Millisecond, "the agents' --flush-window")
	flag.BoolVar(&o.keep, "keep", false, "keep the run directory (logs, MinIO data) even when the run is clean")
	flag.Parse()
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o
}

func main() {
	os.Exit(run(parseFlags()))
}

// run is one chaos run; it returns the exit status.
func run(o options) int {
	if o.mode != modeDistributed && o.mode != modeServe {
		fmt.Fprintf(os.Stderr, "chaos: -mode %q: want %s or %s\n", o.mode, modeDistributed, modeServe)
		return exitSetup
	}
	if o.rate <= 0 || o.producers <= 0 || o.partitions <= 0 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "chaos: -rate, -producers, -partitions and -duration must be positive")
		return exitSetup
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "sluice-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return exitSetup
	}
	r := &runner{o: o, dir: dir}
	status := r.run(ctx)
	if status == exitClean && !o.keep {
		os.RemoveAll(dir)
		fmt.Printf("run directory %s removed (-keep keeps it)\n", dir)
	} else {
		fmt.Printf("logs: %s\n", dir)
	}
	return status
}

// runner holds one run's moving parts, so that teardown finds them.
type runner struct {
	o         options
	dir       string
	events    *slog.Logger
	eventsOut *os.File
	clientLog *os.File
	minio     *s3server.Server
	cluster   *cluster
	work      *workload
	rec       *recorder
	failovers failovers
	stats     faultStats

	mu        sync.Mutex // guards crashes and stopping
	crashes   []Violation
	stopping  bool
	restarted sync.WaitGroup // crash restarts in flight
}

func (r *runner) run(ctx context.Context) int {
	defer r.teardown()
	if err := r.setup(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: setup:", err)
		return exitSetup
	}
	r.rec = newRecorder(&r.failovers)

	start := time.Now()
	faultEnd := start.Add(time.Duration(float64(r.o.duration) * (1 - livenessShare)))
	end := start.Add(r.o.duration)
	fmt.Printf("chaos: seed %d, %v: faults until %v, then none (liveness)\n", r.o.seed, r.o.duration, faultEnd.Sub(start).Round(time.Second))

	var err error
	r.work, err = startWorkload(ctx, workloadConfig{
		bootstrap: r.cluster.balancer.Addr(), producers: r.o.producers, consumers: r.o.consumers,
		ratePerSec: r.o.rate, clientLog: r.clientLog, clientLevel: kgo.LogLevelInfo,
	}, int32(r.o.partitions), r.rec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: starting the workload:", err)
		return exitSetup
	}
	progressDone := r.progress(ctx, start)
	defer progressDone()

	// Safety phase: faults.
	f := &faults{c: r.cluster, events: r.events, stats: &r.stats, failovers: &r.failovers}
	f.run(ctx, r.o.seed, start, faultEnd)
	// Liveness phase: everything runs, and must make progress.
	if err := r.cluster.heal(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos: restarting processes for the liveness phase:", err)
		return exitSetup
	}
	r.events.Info("liveness phase: no more faults")
	if !sleepCtx(ctx, time.Until(end)) {
		fmt.Fprintln(os.Stderr, "chaos: interrupted")
		return exitSetup
	}
	bound := time.Now().Add(r.o.drain)
	drained := r.work.drain(bound)
	r.events.Info("producers stopped", "all_settled", drained)
	groupErr := r.work.waitGroupCaughtUp(ctx, int32(r.o.partitions), bound)
	r.work.stopGroup(ctx)
	progressDone()

	reads, hwm, readTo, readErr := r.readBack(ctx)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "chaos: interrupted")
		return exitSetup
	}
	violations := Check(r.rec.history(reads, hwm, readTo))
	violations = append(violations, r.processViolations()...)
	if groupErr != nil {
		violations = append(violations, Violation{"group-stalled",
			fmt.Sprintf("the group did not commit up to the end of the log within -drain %v of the end: %v", r.o.drain, groupErr)})
	}
	r.summarize(len(reads), hwm, readErr, violations)
	if len(violations) > 0 {
		return exitViolations
	}
	return exitClean
}

// setup builds the binary if needed, then starts MinIO and the cluster.
func (r *runner) setup(ctx context.Context) error {
	var err error
	if r.eventsOut, err = os.Create(filepath.Join(r.dir, "events.log")); err != nil {
		return err
	}
	var w io.Writer = r.eventsOut
	if r.o.verbose {
		w = io.MultiWriter(r.eventsOut, os.Stdout)
	}
	r.events = slog.New(slog.NewTextHandler(w, nil))
	if r.clientLog, err = os.Create(filepath.Join(r.dir, "clients.log")); err != nil {
		return err
	}
	bin := r.o.sluice
	if bin == "" {
		bin = filepath.Join(r.dir, "sluice")
		fmt.Println("chaos: building ./cmd/sluice")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/sluice (run chaos from the module root, or pass -sluice): %v\n%s", err, out)
		}
	}
	if r.minio, err = s3server.Launch("minio", filepath.Join(r.dir, "minio")); err != nil {
		return err
	}
	prefix := "chaos-" + randomHex(4)
	r.events.Info("minio running", "endpoint", r.minio.Endpoint, "bucket", r.minio.Bucket, "prefix", prefix)
	r.cluster, err = startCluster(clusterConfig{
		mode: r.o.mode, bin: bin, storeURL: r.minio.URL(prefix), logDir: r.dir,
		lease: r.o.lease, flushWindow: r.o.flush, events: r.events, onCrash: r.crashed,
	})
	return err
}

// crashed records a process that exited without being killed, a
// violation, and restarts it a moment later, as a supervisor would, so
// that one crash does not end the run's usefulness.
func (r *runner) crashed(p *proc, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.crashes = append(r.crashes, Violation{"process-exited",
		fmt.Sprintf("%s exited by itself (%v) at %s; see %s", p.name, err, time.Now().Format("15:04:05.000"), p.logPath)})
	if r.stopping {
		return
	}
	r.restarted.Add(1)
	go func() {
		defer r.restarted.Done()
		time.Sleep(crashRestartDelay)
		r.mu.Lock()
		stopping := r.stopping
		r.mu.Unlock()
		if !stopping {
			if err := p.start(); err != nil {
				r.stats.restartFailed(err)
			}
		}
	}()
}

// processViolations are the crashes and the restarts that failed.
func (r *runner) processViolations() []Violation {
	r.mu.Lock()
	out := slices.Clone(r.crashes)
	r.mu.Unlock()
	r.stats.mu.Lock()
	for _, e := range r.stats.restartErrs {
		out = append(out, Violation{"restart-failed", e})
	}
	r.stats.mu.Unlock()
	return out
}

// readBack takes the high watermarks and reads the topic up to them; see
// History.ReadTo for readTo. When the watermarks cannot be listed, no
// partition could be read at all.
func (r *runner) readBack(ctx context.Context) (reads []Read, hwm, readTo map[int32]int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, readBackTimeout)
	defer cancel()
	adm := kadm.NewClient(r.work.admin)
	if hwm, err = endOffsets(ctx, adm, int32(r.o.partitions)); err != nil {
		readTo = map[int32]int64{}
		for p := range int32(r.o.partitions) {
			readTo[p] = 0
		}
		return nil, map[int32]int64{}, readTo, err
	}
	reads, readTo, err = readBack(ctx, r.work.clientOpts("read-back"), hwm)
	return reads, hwm, readTo, err
}

// progress prints a line every progressEvery until the returned function
// is called (more than once is fine).
func (r *runner) progress(ctx context.Context, start time.Time) func() {
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sent, acked, failed := r.rec.counts()
			agent, seq := r.stats.kills()
			fmt.Printf("  %4ds  sent %d  acked %d  failed %d  consumed %d  kills: agent %d, sequencer %d\n",
				int(time.Since(start).Seconds()), sent, acked, failed, r.rec.consumed.Load(), agent, seq)
		}
	}()
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

func (r *runner) summarize(read int, hwm map[int32]int64, readErr error, violations []Violation) {
	sent, acked, failed := r.rec.counts()
	var hwmTotal int64
	for _, h := range hwm {
		hwmTotal += h
	}
	agent, seq := r.stats.kills()
	times, unmeasured := r.failovers.result()

	fmt.Println()
	fmt.Printf("chaos summary (seed %d, %v, mode %s)\n", r.o.seed, r.o.duration, r.o.mode)
	fmt.Printf("  produce:    %d sent, %d acknowledged, %d failed\n", sent, acked, failed)
	fmt.Printf("  read back:  %d records, high watermarks sum to %d over %d partitions\n", read, hwmTotal, len(hwm))
	if readErr != nil {
		fmt.Printf("              %v\n", readErr)
	}
	samples, sampleErrs := r.rec.sampleCounts()
	fmt.Printf("  group:      %d records consumed, redeliveries included (%d fetch errors); %d commit samples (%d fetches failed)\n",
		r.rec.consumed.Load(), r.rec.consumeErrs.Load(), samples, sampleErrs)
	fmt.Printf("  kills:      agent %d, sequencer %d\n", agent, seq)
	if len(times) > 0 {
		fmt.Printf("  failovers:  %d measured, p50 %v, p90 %v, max %v", len(times),
			times[len(times)/2].Round(time.Millisecond), times[len(times)*9/10].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
		if o := r.o; o.verbose {
			fmt.Printf(" (all: %v)", times)
		}
	} else {
		fmt.Printf("  failovers:  none measured")
	}
	if unmeasured > 0 {
		fmt.Printf(" (%d kills saw no later ack before the next kill or the end)", unmeasured)
	}
	fmt.Println()
	if len(violations) == 0 {
		fmt.Println("  violations: none")
		return
	}
	fmt.Printf("  violations: %d\n", len(violations))
	byKind := map[string][]Violation{}
	var kinds []string
	for _, v := range violations {
		if byKind[v.Kind] == nil {
			kinds = append(kinds, v.Kind)
		}
		byKind[v.Kind] = append(byKind[v.Kind], v)
	}
	slices.SortFunc(kinds, cmp.Compare)
	for _, k := range kinds {
		vs := byKind[k]
		fmt.Printf("    %s (%d)\n", k, len(vs))
		for _, v := range vs[:min(len(vs), violationsShownPerKind)] {
			fmt.Printf("      %s\n", v.Detail)
		}
		if len(vs) > violationsShownPerKind {
			fmt.Printf("      … and %d more\n", len(vs)-violationsShownPerKind)
		}
	}
	fmt.Printf("  replay the fault schedule: go run ./cmd/chaos -duration %v -seed %d\n", r.o.duration, r.o.seed)
}

// teardown stops everything the run started, in reverse order.
func (r *runner) teardown() {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	r.restarted.Wait()
	if r.work != nil {
		r.work.close()
	}
	if r.cluster != nil {
		r.cluster.stop()
	}
	if r.minio != nil {
		r.minio.Stop()
	}
	for _, f := range []*os.File{r.clientLog, r.eventsOut} {
		if f != nil {
			f.Close()
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
