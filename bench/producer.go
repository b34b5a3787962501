package bench

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is one franz-go client producing load records as one writer.
// Records and their values are reused once acknowledged: at a few hundred
// MB/s, allocating every value would have the load generator's garbage
// collector compete with the broker for the machine's cores.
type producer struct {
	cl          *kgo.Client
	writer      uint64
	seq         uint64 // next sequence number; only the producing goroutine touches it
	recordBytes int
	payloads    *payloads
	meter       *meter
	acked       *AckedSet // nil unless the run verifies acknowledged records
	records     sync.Pool // *kgo.Record with a value of recordBytes
	onAck       func(*kgo.Record, error)
}

func newProducer(cl *kgo.Client, writer uint64, recordBytes int, m *meter, acked *AckedSet) *producer {
	p := &producer{cl: cl, writer: writer, recordBytes: recordBytes, payloads: newPayloads(writer), meter: m, acked: acked}
	p.records.New = func() any { return &kgo.Record{Value: make([]byte, recordBytes)} }
	p.onAck = p.acknowledged // a method value allocates; make it once
	return p
}

// produce sends the next record, stamped with now as its send time.
// franz-go blocks here when its buffer is full, which is what paces a run
// at the maximum rate.
func (p *producer) produce(ctx context.Context, now time.Time) {
	r := p.records.Get().(*kgo.Record)
	p.payloads.fill(r.Value[HeaderBytes:])
	EncodeValue(r.Value, RecordHeader{Writer: p.writer, Seq: p.seq, SentUnixNano: now.UnixNano()})
	p.seq++
	p.cl.Produce(ctx, r, p.onAck)
}

// acknowledged is the promise of every record: its latency runs from the
// send time in its header to now.
func (p *producer) acknowledged(r *kgo.Record, err error) {
	if err != nil {
		p.meter.fail(err)
	} else {
		sent := int64(binary.BigEndian.Uint64(r.Value[24:]))
		p.meter.observe(time.Duration(time.Now().UnixNano()-sent), len(r.Value))
		if p.acked != nil {
			p.acked.Add(p.writer, binary.BigEndian.Uint64(r.Value[16:]))
		}
	}
	// franz-go is done with the record once its promise runs.
	*r = kgo.Record{Value: r.Value}
	p.records.Put(r)
}

// pacingTick is how often a paced producer sends what it owes. Short
// enough that a 2 MB/s load of 1 KiB records is 20 records a tick, not a
// burst a second.
const pacingTick = 10 * time.Millisecond

// run produces until deadline, ctx ends or the budget (bytes left for all
// producers; nil for no limit) runs out: as fast as franz-go takes records
// when bytesPerSec is 0, else paced to bytesPerSec.
func (p *producer) run(ctx context.Context, deadline time.Time, bytesPerSec float64, budget *atomic.Int64) {
	take := func() bool { return budget == nil || budget.Add(-int64(p.recordBytes)) >= 0 }
	// Records produced are seen through even if ctx ends: franz-go would
	// fail the buffered ones of a canceled context, and an interrupted
	// run would report them as errors.
	sendCtx := context.WithoutCancel(ctx)
	if bytesPerSec <= 0 {
		for ctx.Err() == nil {
			now := time.Now()
			if !now.Before(deadline) || !take() {
				return
			}
			p.produce(sendCtx, now)
		}
		return
	}
	// What is owed follows the clock, not the ticks: after a stall (a full
	// buffer, a slow broker) the producer catches up, as a real source of
	// records would, instead of quietly lowering the rate.
	start := time.Now()
	recordsPerSec := bytesPerSec / float64(p.recordBytes)
	var sent float64
	ticker := time.NewTicker(pacingTick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		for now := time.Now(); sent < now.Sub(start).Seconds()*recordsPerSec; sent++ {
			if !now.Before(deadline) || !take() {
				return
			}
			p.produce(sendCtx, now)
			now = time.Now()
		}
	}
}
