package bench

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// targets are the offsets, per partition, at which the consumers stop. In
// an e2e run they are known only once the producers are done, so they are
// published once, by closing ready.
type targets struct {
	ready chan struct{}
	offs  map[int32]int64 // written before ready closes, read-only after
}

func newTargets() *targets { return &targets{ready: make(chan struct{})} }

func (t *targets) set(offs map[int32]int64) {
	t.offs = offs
	close(t.ready)
}

// get returns the targets, or nil while they are unknown.
func (t *targets) get() map[int32]int64 {
	select {
	case <-t.ready:
		return t.offs
	default:
		return nil
	}
}

// consumer is one franz-go client reading a fixed set of partitions, with
// no consumer group, from given offsets up to the targets.
type consumer struct {
	cl       *kgo.Client
	next     map[int32]int64 // the next offset to read, per partition
	verifier *Verifier
	meter    *meter
	// e2e: record each record's latency from its send time to its arrival.
	e2e bool
}

func newConsumer(brokers []string, topic string, from map[int32]int64, m *meter, e2e bool, opts ...kgo.Opt) (*consumer, error) {
	parts := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for p, o := range from {
		parts[p] = kgo.NewOffset().At(o)
		next[p] = o
	}
	opts = append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts})}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	return &consumer{cl: cl, next: next, verifier: NewVerifier(), meter: m, e2e: e2e}, nil
}

// caughtUp reports whether every partition reached its target.
func (c *consumer) caughtUp(t map[int32]int64) bool {
	for p, next := range c.next {
		if next < t[p] {
			return false
		}
	}
	return true
}

// run reads until the targets are reached (nil) or ctx ends (its error).
func (c *consumer) run(ctx context.Context, t *targets) error {
	// While the targets are unknown, a poll that finds nothing new waits
	// for the broker's long poll; pollCtx ends it the moment they are set.
	pollCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-t.ready:
			cancel()
		case <-pollCtx.Done():
		}
	}()
	for {
		offs := t.get()
		if offs != nil && c.caughtUp(offs) {
			return nil
		}
		pc := ctx
		if offs == nil {
			pc = pollCtx
		}
		fs := c.cl.PollFetches(pc)
		if err := ctx.Err(); err != nil {
			return err
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				c.meter.fail(err)
			}
		})
		now := time.Now().UnixNano()
		fs.EachRecord(func(r *kgo.Record) {
			c.next[r.Partition] = r.Offset + 1
			h, ok := c.verifier.Observe(r.Partition, r.Value)
			latency := time.Duration(-1)
			if ok && c.e2e {
				latency = time.Duration(now - h.SentUnixNano)
			}
			c.meter.observe(latency, len(r.Value))
		})
	}
}
