package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	topicName = "chaos"
	groupName = "chaos"

	// produceRequestTimeout is how long a producer waits for one produce
	// response before it retries, on a new connection.
	produceRequestTimeout = 10 * time.Second
	// retryBackoff is short and flat so that a producer notices a
	// recovered cluster quickly: the failover time we measure should be
	// the system's, not the client's backoff (franz-go's default grows to
	// 5 s).
	retryBackoff = 100 * time.Millisecond
	// commitSampleEvery spaces the fetches of the group's committed offsets.
	commitSampleEvery = 500 * time.Millisecond
	// adminTimeout bounds one admin request.
	adminTimeout = 2 * time.Second
	// valueFillerBytes pads values to a realistic small-record size.
	valueFillerBytes = 100
)

// recordValue is the value produced under key id: the id again, so that
// the read-back can tell a record whose bytes were mixed up from one that
// is merely at the wrong offset, and filler.
func recordValue(id string) []byte {
	return []byte(id + "|" + strings.Repeat("x", valueFillerBytes))
}

// recordID names record seq of producer n. Zero-padded, so that ids sort
// in send order in reports.
func recordID(producer, seq int) string { return fmt.Sprintf("p%d-%09d", producer, seq) }

// recorder collects the history as it happens. Every producer callback and
// every commit sample goes through its mutex; at the rates this run uses
// that is nowhere near contended.
type recorder struct {
	failovers *failovers

	mu        sync.Mutex // guards everything below
	frozen    bool       // the liveness bound expired: outcomes no longer count
	sent      []string
	acks      map[string]Position
	failures  map[string]string
	commits   []CommitSample
	samples   int // commit fetches that answered
	sampleErr int // commit fetches that failed

	consumed    atomic.Int64 // records the group members polled
	consumeErrs atomic.Int64 // fetch errors the group members saw
}

func newRecorder(f *failovers) *recorder {
	return &recorder{failovers: f, acks: map[string]Position{}, failures: map[string]string{}}
}

// send records that id is being handed to a producer and returns the time
// it was.
func (r *recorder) send(id string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, id)
	return time.Now()
}

// done records a producer's verdict on id.
func (r *recorder) done(id string, sentAt time.Time, rec *kgo.Record, err error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frozen {
		return
	}
	if err != nil {
		r.failures[id] = err.Error()
		return
	}
	r.acks[id] = Position{rec.Partition, rec.Offset}
	r.failovers.acked(sentAt, now)
}

// freeze stops counting outcomes: records still in flight when the
// liveness bound expires stay unacknowledged, whatever closing the client
// later says about them.
func (r *recorder) freeze() {
	r.mu.Lock()
	r.frozen = true
	r.mu.Unlock()
}

// counts returns sends, acks and failures so far.
func (r *recorder) counts() (sent, acked, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sent), len(r.acks), len(r.failures)
}

// sampleCounts returns the commit fetches that answered and that failed.
func (r *recorder) sampleCounts() (answered, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.samples, r.sampleErr
}

func (r *recorder) commitSample(resp kadm.OffsetResponses) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples++
	for _, o := range resp.Sorted() {
		if o.Topic != topicName || o.Err != nil || o.At < 0 {
			continue
		}
		r.commits = append(r.commits, CommitSample{Sample: r.samples, Partition: o.Partition, Offset: o.At})
	}
}

func (r *recorder) commitSampleFailed() {
	r.mu.Lock()
	r.sampleErr++
	r.mu.Unlock()
}

// history returns what the checker judges, given the read-back.
func (r *recorder) history(reads []Read, hwm, readTo map[int32]int64) History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return History{Sent: r.sent, Acks: r.acks, Failures: r.failures, Reads: reads, HWM: hwm, ReadTo: readTo, Commits: r.commits}
}

// workloadConfig sizes the workload.
type workloadConfig struct {
	bootstrap   string // the balancer: clients only ever talk to it
	producers   int
	consumers   int
	ratePerSec  int // records per second per producer
	clientLog   io.Writer
	clientLevel kgo.LogLevel
}

// workload is the producers, the consumer group and the commit sampler.
type workload struct {
	cfg       workloadConfig
	rec       *recorder
	producers []*kgo.Client
	consumers []*kgo.Client
	admin     *kgo.Client

	stopProducing chan struct{}
	producing     sync.WaitGroup
	cancelGroup   context.CancelFunc
	group         sync.WaitGroup
}

func (w *workload) clientOpts(name string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(w.cfg.bootstrap),
		kgo.ClientID(name),
		kgo.RetryBackoffFn(func(int) time.Duration { return retryBackoff }),
		// An agent killed after the balancer connected to it, but before
		// it answered the connection's first request, closes cleanly
		// (the kernel sends FIN for a SIGKILLed process). By default
		// franz-go reads an EOF on a connection's first request as a
		// TLS or SASL misconfiguration and fails the records without
		// retrying. Our configuration is known good, and behind a load
		// balancer that EOF is a lost backend, so retry it.
		kgo.AlwaysRetryEOF(),
		kgo.WithLogger(kgo.BasicLogger(w.cfg.clientLog, w.cfg.clientLevel, func() string {
			return time.Now().Format("15:04:05.000 ") + name + " "
		})),
	}
}

// createTopic creates the topic through the balancer, retrying until the
// cluster answers or ctx ends: right after startup no sequencer may be
// active yet. A retry after a lost response finds the topic there.
func createTopic(ctx context.Context, adm *kadm.Client, partitions int32) error {
	var last error
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := adm.CreateTopic(rctx, partitions, 1, nil, topicName)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		last = err
		sleepCtx(ctx, 250*time.Millisecond)
	}
	return fmt.Errorf("creating topic %q: %v (last error: %v)", topicName, ctx.Err(), last)
}

// startWorkload creates the topic and starts producing, consuming and
// sampling commits.
func startWorkload(ctx context.Context, cfg workloadConfig, partitions int32, rec *recorder) (*workload, error) {
	w := &workload{cfg: cfg, rec: rec, stopProducing: make(chan struct{})}
	var err error
	if w.admin, err = kgo.NewClient(w.clientOpts("admin")...); err != nil {
		return nil, err
	}
	adm := kadm.NewClient(w.admin)
	setupCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := createTopic(setupCtx, adm, partitions); err != nil {
		w.admin.Close()
		return nil, err
	}

	for i := range cfg.producers {
		// Idempotence, acks=all and unlimited record retries are
		// franz-go's defaults. acks is spelled out because the run's
		// claims are about acks=all; with no delivery timeout, only an
		// error the client deems fatal can fail a record.
		cl, err := kgo.NewClient(append(w.clientOpts(fmt.Sprintf("producer-%d", i)),
			kgo.DefaultProduceTopic(topicName),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.ProduceRequestTimeout(produceRequestTimeout),
		)...)
		if err != nil {
			w.close()
			return nil, err
		}
		w.producers = append(w.producers, cl)
	}
	for i := range cfg.consumers {
		cl, err := kgo.NewClient(append(w.clientOpts(fmt.Sprintf("consumer-%d", i)),
			kgo.ConsumerGroup(groupName),
			kgo.ConsumeTopics(topicName),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AutoCommitInterval(time.Second),
			kgo.FetchMaxWait(500*time.Millisecond),
		)...)
		if err != nil {
			w.close()
			return nil, err
		}
		w.consumers = append(w.consumers, cl)
	}

	for i, cl := range w.producers {
		w.producing.Add(1)
		go w.produce(ctx, i, cl)
	}
	groupCtx, cancelGroup := context.WithCancel(ctx)
	w.cancelGroup = cancelGroup
	for _, cl := range w.consumers {
		w.group.Add(1)
		go w.consume(groupCtx, cl)
	}
	w.group.Add(1)
	go w.sampleCommits(groupCtx, adm)
	return w, nil
}

// produce hands one record a tick to the client. Produce blocks once the
// client's buffer is full (during an outage), and ticks missed meanwhile
// are dropped: the rate is a ceiling, and the backlog stays bounded.
func (w *workload) produce(ctx context.Context, n int, cl *kgo.Client) {
	defer w.producing.Done()
	tick := time.NewTicker(time.Second / time.Duration(w.cfg.ratePerSec))
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-w.stopProducing:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id := recordID(n, seq)
		sentAt := w.rec.send(id)
		cl.Produce(ctx, &kgo.Record{Key: []byte(id), Value: recordValue(id)}, func(r *kgo.Record, err error) {
			w.rec.done(id, sentAt, r, err)
		})
	}
}

func (w *workload) consume(ctx context.Context, cl *kgo.Client) {
	defer w.group.Done()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(string, int32, error) { w.rec.consumeErrs.Add(1) })
		w.rec.consumed.Add(int64(fs.NumRecords()))
	}
}

// sampleCommits fetches the group's committed offsets periodically. One
// fetch at a time, so sample k was answered before sample k+1 was asked:
// an offset that is lower in a later sample went back.
func (w *workload) sampleCommits(ctx context.Context, adm *kadm.Client) {
	defer w.group.Done()
	tick := time.NewTicker(commitSampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.sampleOnce(ctx, adm)
	}
}

func (w *workload) sampleOnce(ctx context.Context, adm *kadm.Client) {
	rctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	resp, err := adm.FetchOffsets(rctx, groupName)
	if err != nil {
		if ctx.Err() == nil {
			w.rec.commitSampleFailed()
		}
		return
	}
	w.rec.commitSample(resp)
}

// drain stops producing and waits, until deadline, for every record in
// flight to be acknowledged or failed. It reports whether all were.
//
// Neither wait cancels a record: the producers' context is left alone,
// because cancelling it fails buffered records, and a record the deadline
// catches in flight must count as unacknowledged, not as failed. A
// producer may still be blocked in Produce on a full buffer when the
// deadline passes; closing its client releases it.
func (w *workload) drain(deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	defer w.rec.freeze()
	close(w.stopProducing)
	stopped := make(chan struct{})
	go func() {
		w.producing.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		return false
	}
	var wg sync.WaitGroup
	var incomplete atomic.Bool
	for _, cl := range w.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cl.Flush(ctx) != nil {
				incomplete.Store(true)
			}
		}()
	}
	wg.Wait()
	return !incomplete.Load()
}

// waitGroupCaughtUp waits, until deadline, for the group to have committed
// every partition up to its high watermark: with the producers stopped and
// no faults, a group that never catches up is stuck. It reports where each
// lagging partition was when the deadline passed. The fetches here are not
// recorded as samples: they run alongside the sampler, and samples must
// come one at a time.
func (w *workload) waitGroupCaughtUp(ctx context.Context, partitions int32, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	adm := kadm.NewClient(w.admin)
	hwm, err := endOffsets(ctx, adm, partitions)
	if err != nil {
		return err
	}
	var lag []string
	for {
		lag = lag[:0]
		rctx, rcancel := context.WithTimeout(ctx, adminTimeout)
		resp, err := adm.FetchOffsets(rctx, groupName)
		rcancel()
		for p := range partitions {
			if hwm[p] == 0 {
				continue
			}
			o, ok := resp.Lookup(topicName, p)
			switch {
			case err != nil:
				lag = append(lag, fmt.Sprintf("partition %d: %v", p, err))
			case !ok || o.Err != nil || o.At < hwm[p]:
				lag = append(lag, fmt.Sprintf("partition %d committed %d of %d", p, o.At, hwm[p]))
			}
		}
		if len(lag) == 0 {
			return nil
		}
		if !sleepCtx(ctx, commitSampleEvery) {
			return fmt.Errorf("not caught up: %s", strings.Join(lag, "; "))
		}
	}
}

// stopGroup stops the consumers (they leave the group and commit) and
// takes one last commit sample after they have.
func (w *workload) stopGroup(ctx context.Context) {
	w.cancelGroup()
	w.group.Wait()
	for _, cl := range w.consumers {
		cl.Close()
	}
	w.consumers = nil
	w.sampleOnce(ctx, kadm.NewClient(w.admin))
}

func (w *workload) close() {
	for _, cl := range append(w.producers, w.consumers...) {
		cl.Close()
	}
	w.producers, w.consumers = nil, nil
	if w.admin != nil {
		w.admin.Close()
	}
}

// sleepCtx sleeps for d or until ctx ends, and reports whether it slept
// the whole time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
