package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Mode is what a load run does.
type Mode string

const (
	// ModeProduce produces for Duration (and with Verify reads it all back).
	ModeProduce Mode = "produce"
	// ModeConsume reads a topic from its start to the end it had when the
	// run began, as fast as possible.
	ModeConsume Mode = "consume"
	// ModeE2E produces and consumes at once and measures the latency from
	// the Produce call to the consumer.
	ModeE2E Mode = "e2e"
)

// LoadConfig describes a load: records of RecordBytes at RateBytesPerSec
// (0: as fast as the broker takes them) for Duration, from Clients franz-go
// clients, spread over Partitions of Topic.
type LoadConfig struct {
	Mode            Mode // default ModeProduce
	Brokers         []string
	Topic           string
	Partitions      int32 // of a topic the run creates; an existing topic keeps its own
	RecordBytes     int   // value size, at least HeaderBytes
	RateBytesPerSec int   // in total over all clients; 0 is as fast as possible
	Duration        time.Duration
	Clients         int // producing clients, each a writer; default 1
	Consumers       int // consuming clients, over disjoint partitions; default Clients
	// Acks is "all" (idempotent, franz-go's default), "1" or "0" (both
	// without idempotence, which requires acks=all).
	Acks string
	// Compression is none (the default), gzip, snappy, lz4 or zstd.
	Compression string
	Linger      time.Duration // franz-go's ProducerLinger; default 0
	// MaxBytes stops producing after this many bytes in total (0: no
	// limit), so a max-rate run cannot outgrow an in-memory broker.
	MaxBytes int64
	// Verify, in produce mode, reads everything produced back afterwards
	// and checks it. consume and e2e always verify.
	Verify bool
	// Progress, if set, is called about once a second from another goroutine.
	Progress func(Progress)
}

// recordBytesMax bounds a record: its batch, framing included, must stay
// under franz-go's (and Kafka's) default batch limit of 1,000,012 bytes.
const recordBytesMax = 990_000

func (c LoadConfig) withDefaults() (LoadConfig, error) {
	if c.Mode == "" {
		c.Mode = ModeProduce
	}
	if c.Clients <= 0 {
		c.Clients = 1
	}
	if c.Consumers <= 0 {
		c.Consumers = c.Clients
	}
	if c.Acks == "" {
		c.Acks = "all"
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
	switch {
	case len(c.Brokers) == 0:
		return c, errors.New("no brokers")
	case c.Topic == "":
		return c, errors.New("no topic")
	case c.Mode != ModeProduce && c.Mode != ModeConsume && c.Mode != ModeE2E:
		return c, fmt.Errorf("unknown mode %q (want produce, consume or e2e)", c.Mode)
	case c.Mode != ModeConsume && (c.RecordBytes < HeaderBytes || c.RecordBytes > recordBytesMax):
		return c, fmt.Errorf("record bytes %d: must be %d..%d (the header carries writer, sequence, send time and checksum)", c.RecordBytes, HeaderBytes, recordBytesMax)
	case c.Mode != ModeConsume && c.Duration <= 0:
		return c, errors.New("duration must be positive")
	case c.Mode != ModeConsume && c.Partitions <= 0:
		return c, errors.New("partitions must be positive")
	}
	if _, err := acksOpts(c.Acks); err != nil {
		return c, err
	}
	if _, err := compressionCodec(c.Compression); err != nil {
		return c, err
	}
	return c, nil
}

// idempotent reports whether the producers are idempotent, and so promise
// no duplicates and no reordering.
func (c LoadConfig) idempotent() bool { return c.Acks == "all" || c.Acks == "-1" }

func acksOpts(acks string) ([]kgo.Opt, error) {
	switch acks {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, fmt.Errorf("acks %q: want all, 1 or 0 (idempotence, franz-go's default, requires all)", acks)
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// producerBufferBytes bounds what each producing client buffers, so that
// a max-rate run measures the broker, not how much the client can queue.
const producerBufferBytes = 32 << 20

// catchUpMax bounds how long consumers may take, after producing ends, to
// read what was produced.
const catchUpMax = 2 * time.Minute

// Run runs the load cfg describes and returns what it measured. A run that
// completes returns a Result even when records failed or verification
// found problems: Result.Err says so. Ending ctx stops producing and
// consuming early; the Result then covers what was done.
func Run(ctx context.Context, cfg LoadConfig) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...))
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	r := &run{cfg: cfg, adm: kadm.NewClient(admin), start: time.Now()}
	r.res = &Result{Mode: cfg.Mode, Topic: cfg.Topic, Consumers: cfg.Consumers}
	if cfg.Mode != ModeConsume {
		r.res.RecordBytes, r.res.RateBytesPerSec, r.res.Clients = cfg.RecordBytes, cfg.RateBytesPerSec, cfg.Clients
		r.res.Acks, r.res.Compression, r.res.Idempotent = cfg.Acks, cfg.Compression, cfg.idempotent()
	}
	if cfg.Mode == ModeProduce && !cfg.Verify {
		r.res.Consumers = 0
	}
	switch cfg.Mode {
	case ModeConsume:
		err = r.consumeOnly(ctx)
	case ModeE2E:
		err = r.endToEnd(ctx)
	default:
		err = r.produceOnly(ctx)
	}
	if err != nil {
		return nil, err
	}
	return r.res, nil
}

// run is one Run in progress.
type run struct {
	cfg   LoadConfig
	adm   *kadm.Client
	start time.Time
	res   *Result
}

func (r *run) produceOnly(ctx context.Context) error {
	if err := r.ensureTopic(ctx); err != nil {
		return err
	}
	var before map[int32]int64
	var acked *AckedSet
	if r.cfg.Verify {
		var err error
		if before, err = r.offsets(ctx, true); err != nil { // read back only this run's records
			return err
		}
		acked = r.ackedSet()
	}
	pm := newMeter(time.Now())
	stop := r.reportProgress(pm, nil)
	err := r.produce(ctx, pm, acked)
	stop()
	if err != nil || !r.cfg.Verify {
		return err
	}
	wctx, cancel := windDown(ctx)
	defer cancel()
	after, err := r.producedEnd(wctx)
	if err != nil {
		return err
	}
	t := newTargets()
	t.set(after)
	cctx, cancel := context.WithTimeout(ctx, catchUpMax)
	defer cancel()
	cm := newMeter(time.Now())
	defer r.reportProgress(nil, cm)()
	v, err := r.consume(cctx, before, t, cm, false)
	if err != nil {
		return err
	}
	r.verify(v, acked)
	return nil
}

func (r *run) consumeOnly(ctx context.Context) error {
	from, err := r.offsets(ctx, false)
	if err != nil {
		return err
	}
	to, err := r.offsets(ctx, true)
	if err != nil {
		return err
	}
	t := newTargets()
	t.set(to)
	cctx := ctx
	if r.cfg.Duration > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, r.cfg.Duration)
		defer cancel()
	}
	cm := newMeter(time.Now())
	defer r.reportProgress(nil, cm)()
	v, err := r.consume(cctx, from, t, cm, false)
	if err != nil {
		return err
	}
	if c := r.res.Consume; !*c.CaughtUp && ctx.Err() == nil {
		c.StoppedAtDuration = true // as asked: not a failure
	}
	r.verify(v, nil)
	return nil
}

func (r *run) endToEnd(ctx context.Context) error {
	if err := r.ensureTopic(ctx); err != nil {
		return err
	}
	from, err := r.offsets(ctx, true) // only what this run produces
	if err != nil {
		return err
	}
	acked := r.ackedSet()
	t := newTargets()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pm, cm := newMeter(time.Now()), newMeter(time.Now())
	defer r.reportProgress(pm, cm)()
	var v *Verifier
	consumed := make(chan error, 1)
	go func() {
		var err error
		v, err = r.consume(cctx, from, t, cm, true)
		consumed <- err
	}()
	err = r.produce(ctx, pm, acked)
	if err != nil {
		return err
	}
	wctx, wcancel := windDown(ctx)
	defer wcancel()
	to, err := r.producedEnd(wctx)
	if err != nil {
		return err
	}
	t.set(to)
	select {
	case err = <-consumed:
	case <-time.After(catchUpMax):
		cancel()
		err = <-consumed
	}
	if err != nil {
		return err
	}
	// Only now are all acknowledgements in: the producers have flushed.
	r.verify(v, acked)
	return nil
}

// ackedSet returns the set producers record acknowledgements in, or nil
// for acks=0, where an "acknowledgement" only means the request was written.
func (r *run) ackedSet() *AckedSet {
	if r.cfg.Acks == "0" {
		return nil
	}
	return NewAckedSet()
}

// ensureTopic creates the topic, or accepts the one that exists.
func (r *run) ensureTopic(ctx context.Context) error {
	_, err := r.adm.CreateTopic(ctx, r.cfg.Partitions, 1, nil, r.cfg.Topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", r.cfg.Topic, err)
	}
	return nil
}

// settleInterval is how long the end offsets must stay put, after an
// acks=0 run, before they count as the end of what was produced.
const settleInterval = 500 * time.Millisecond

// producedEnd lists the end offsets once producing is done. With acks, every
// acknowledged record is below them already. With acks=0 the last records
// may still be on their way (in a flush window, say), so it waits until the
// end offsets stop moving (if they never do, whatever lands later is
// simply not read).
func (r *run) producedEnd(ctx context.Context) (map[int32]int64, error) {
	offs, err := r.offsets(ctx, true)
	if err != nil || r.cfg.Acks != "0" {
		return offs, err
	}
	for deadline := time.Now().Add(catchUpMax); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(settleInterval):
		}
		again, err := r.offsets(ctx, true)
		if err != nil {
			return nil, err
		}
		if maps.Equal(offs, again) {
			break
		}
		offs = again
	}
	return offs, nil
}

// offsets lists the topic's start (or end) offset of every partition.
func (r *run) offsets(ctx context.Context, end bool) (map[int32]int64, error) {
	list := r.adm.ListStartOffsets
	if end {
		list = r.adm.ListEndOffsets
	}
	// Behind a balancer, the agent asked may not have learned of a topic
	// another agent just created: UNKNOWN_TOPIC_OR_PARTITION is retriable,
	// as Kafka clients treat it.
	var (
		listed kadm.ListedOffsets
		err    error
	)
	for deadline := time.Now().Add(10 * time.Second); ; {
		listed, err = list(ctx, r.cfg.Topic)
		if err == nil {
			err = listed.Error()
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("list offsets of %s: %w", r.cfg.Topic, err)
	}
	offs := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { offs[o.Partition] = o.Offset })
	if len(offs) == 0 {
		return nil, fmt.Errorf("topic %s has no partitions", r.cfg.Topic)
	}
	return offs, nil
}

// produce runs the producing clients until the duration or byte budget is
// spent, then waits for every record's acknowledgement.
func (r *run) produce(ctx context.Context, m *meter, acked *AckedSet) error {
	opts, _ := acksOpts(r.cfg.Acks)
	codec, _ := compressionCodec(r.cfg.Compression)
	opts = append(opts, kgo.SeedBrokers(r.cfg.Brokers...), kgo.DefaultProduceTopic(r.cfg.Topic),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(r.cfg.Linger),
		kgo.MaxBufferedBytes(producerBufferBytes))
	var budget *atomic.Int64
	if r.cfg.MaxBytes > 0 {
		budget = new(atomic.Int64)
		budget.Store(r.cfg.MaxBytes)
	}
	runID := rand.Uint64() << 16 // writers are unique across runs sharing a topic
	producers := make([]*producer, r.cfg.Clients)
	for i := range producers {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		producers[i] = newProducer(cl, runID|uint64(i), r.cfg.RecordBytes, m, acked)
	}
	start := time.Now()
	deadline := start.Add(r.cfg.Duration)
	perClient := float64(r.cfg.RateBytesPerSec) / float64(r.cfg.Clients)
	var wg sync.WaitGroup
	for _, p := range producers {
		wg.Go(func() {
			p.run(ctx, deadline, perClient, budget)
			// Flush waits for every buffered record's promise, even
			// when ctx ended the run early.
			fctx, cancel := windDown(ctx)
			defer cancel()
			if err := p.cl.Flush(fctx); err != nil {
				m.fail(err)
			}
		})
	}
	wg.Wait()
	r.res.Produce = throughputOf(m, time.Since(start), true)
	return nil
}

// windDown returns the context for finishing what a run started (waiting
// for acknowledgements, listing where producing ended) when ctx, which
// stops a run early, may have ended already: so that an interrupted run
// still reports what it did.
func windDown(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), catchUpMax)
}

// consume reads every partition from from[p] up to the targets with the
// consuming clients, checking each record, records the throughput and
// returns what the checks found.
func (r *run) consume(ctx context.Context, from map[int32]int64, t *targets, m *meter, e2e bool) (*Verifier, error) {
	shares := make([]map[int32]int64, r.cfg.Consumers)
	for p, o := range from {
		i := int(p) % len(shares)
		if shares[i] == nil {
			shares[i] = map[int32]int64{}
		}
		shares[i][p] = o
	}
	var consumers []*consumer
	for _, share := range shares {
		if share == nil {
			continue // more consumers than partitions
		}
		c, err := newConsumer(r.cfg.Brokers, r.cfg.Topic, share, m, e2e)
		if err != nil {
			return nil, err
		}
		defer c.cl.Close()
		consumers = append(consumers, c)
	}
	start := time.Now()
	errs := make([]error, len(consumers))
	var wg sync.WaitGroup
	for i, c := range consumers {
		wg.Go(func() { errs[i] = c.run(ctx, t) })
	}
	wg.Wait()
	tp := throughputOf(m, time.Since(start), e2e)
	caughtUp := true
	for _, err := range errs {
		if err != nil {
			caughtUp = false
		}
	}
	tp.CaughtUp = &caughtUp
	r.res.Consume = tp
	v := NewVerifier()
	for _, c := range consumers {
		v.Merge(c.verifier)
	}
	return v, nil
}

// verify judges what the consumers found; acked must be complete (the
// producers done). Acknowledged records the consumers never reached, when
// they stopped early, are counted as missing but are not a verification
// failure: Result.Err reports the early stop.
func (r *run) verify(v *Verifier, acked *AckedSet) {
	caughtUp := r.res.Consume.CaughtUp != nil && *r.res.Consume.CaughtUp
	rep := v.Report(Expect{Acked: acked, ExactlyOnceInOrder: r.cfg.idempotent(), ReadEverything: caughtUp})
	r.res.Verify = &rep
}

// reportProgress calls cfg.Progress every second with the meters' last
// second, until the returned stop is called.
func (r *run) reportProgress(produce, consume *meter) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-ticker.C:
				p := Progress{Elapsed: now.Sub(r.start)}
				if produce != nil {
					rate := rateOf(produce.rotate(now), now)
					p.Produce = &rate
				}
				if consume != nil {
					rate := rateOf(consume.rotate(now), now)
					p.Consume = &rate
				}
				r.cfg.Progress(p)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// Throughput is what one side of a run (produce or consume) achieved.
type Throughput struct {
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"first_error,omitempty"`
	Seconds       float64 `json:"seconds"`
	MBps          float64 `json:"mb_per_s"`
	RecordsPerSec float64 `json:"records_per_s"`
	// Latency is produce latency (Produce call to acknowledgement) on the
	// produce side, end-to-end latency (Produce call to consumer) on the
	// consume side of an e2e run; nil otherwise.
	Latency *Latency `json:"latency,omitempty"`
	// CaughtUp, on the consume side, says the consumers read everything
	// up to the end offsets they were given.
	CaughtUp *bool `json:"caught_up,omitempty"`
	// StoppedAtDuration, on the consume side of a consume run, says it
	// stopped at its --duration before reaching the end, as asked.
	StoppedAtDuration bool `json:"stopped_at_duration,omitempty"`

	// Hist is the full latency histogram behind Latency.
	Hist *Histogram `json:"-"`
}

func throughputOf(m *meter, elapsed time.Duration, latency bool) *Throughput {
	w := m.total()
	secs := max(elapsed.Seconds(), 1e-9)
	t := &Throughput{Records: w.records.Load(), Bytes: w.bytes.Load(), Errors: w.errors.Load(), Seconds: secs}
	t.MBps, t.RecordsPerSec = float64(t.Bytes)/1e6/secs, float64(t.Records)/secs
	if err := m.err(); err != nil {
		t.FirstError = err.Error()
	}
	if latency {
		s := w.hist.Summary()
		t.Latency, t.Hist = &s, &w.hist
	}
	return t
}

func (t *Throughput) String() string {
	s := fmt.Sprintf("%d records, %.1f MB in %.2fs: %.2f MB/s, %.0f records/s",
		t.Records, float64(t.Bytes)/1e6, t.Seconds, t.MBps, t.RecordsPerSec)
	if t.Errors > 0 {
		s += fmt.Sprintf("; %d errors, first: %s", t.Errors, t.FirstError)
	}
	if t.StoppedAtDuration {
		s += "; stopped at the duration, before the end"
	}
	return s
}

// Result is what a Run measured.
type Result struct {
	Mode  Mode   `json:"mode"`
	Topic string `json:"topic"`
	// The producers' settings; a consume run leaves them out.
	RecordBytes     int    `json:"record_bytes,omitempty"`
	RateBytesPerSec int    `json:"rate_bytes_per_s"` // 0: as fast as possible
	Clients         int    `json:"clients,omitempty"`
	Acks            string `json:"acks,omitempty"`
	Compression     string `json:"compression,omitempty"`
	Idempotent      bool   `json:"idempotent"`
	Consumers       int    `json:"consumers,omitempty"`

	Produce *Throughput   `json:"produce,omitempty"`
	Consume *Throughput   `json:"consume,omitempty"`
	Verify  *VerifyReport `json:"verify,omitempty"`
}

// Err says what went wrong in a run that completed: failed records,
// consumers that did not catch up, or a failed verification.
func (r *Result) Err() error {
	var errs []error
	if p := r.Produce; p != nil && p.Errors > 0 {
		errs = append(errs, fmt.Errorf("%d records failed to produce, first: %s", p.Errors, p.FirstError))
	}
	if c := r.Consume; c != nil && c.CaughtUp != nil && !*c.CaughtUp && !c.StoppedAtDuration {
		errs = append(errs, fmt.Errorf("consumers stopped before reading everything (%d records read)", c.Records))
	}
	if v := r.Verify; v != nil && !v.OK() {
		errs = append(errs, fmt.Errorf("verification failed: %s", strings.Join(v.Problems, "; ")))
	}
	return errors.Join(errs...)
}

// WriteText writes the result for people: the summary lines, then the
// latency histograms.
func (r *Result) WriteText(w io.Writer) {
	if r.Mode == ModeConsume {
		fmt.Fprintf(w, "%s: topic %s, consumers=%d\n", r.Mode, r.Topic, r.Consumers)
	} else {
		fmt.Fprintf(w, "%s: topic %s, record-bytes=%d clients=%d acks=%s compression=%s rate=%s\n",
			r.Mode, r.Topic, r.RecordBytes, r.Clients, r.Acks, r.Compression, rateText(r.RateBytesPerSec))
	}
	if p := r.Produce; p != nil {
		fmt.Fprintf(w, "produce: %v\n", p)
		if p.Latency != nil {
			fmt.Fprintf(w, "produce latency: %v\n", p.Latency)
		}
	}
	if c := r.Consume; c != nil {
		fmt.Fprintf(w, "consume: %v\n", c)
		if c.Latency != nil {
			fmt.Fprintf(w, "end-to-end latency: %v\n", c.Latency)
		}
	}
	if r.Verify != nil {
		fmt.Fprintln(w, r.Verify)
	}
	if p := r.Produce; p != nil && p.Hist != nil {
		fmt.Fprintln(w)
		p.Hist.WriteText(w, "produce latency")
	}
	if c := r.Consume; c != nil && c.Hist != nil {
		fmt.Fprintln(w)
		c.Hist.WriteText(w, "end-to-end latency")
	}
}

func rateText(bytesPerSec int) string {
	if bytesPerSec <= 0 {
		return "max"
	}
	return fmt.Sprintf("%.2f MB/s", float64(bytesPerSec)/1e6)
}
