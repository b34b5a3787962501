package sim

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/sequencer"
)

const (
	topic          = "t"
	requestTimeout = 600 * time.Millisecond
)

// Producer is an idempotent producer as Kafka clients implement one: a
// producer id from InitProducerId, a sequence per partition, one batch in
// flight per partition, and every error retried with the same id and
// sequence, at any agent.
type Producer struct {
	w      *World
	name   string
	pid    int64
	budget int // records left to produce
	parts  []*prodPart
	nextID int
}

type prodPart struct {
	partition int32
	seq       int32
	inflight  *prodBatch
}

type prodBatch struct {
	ids     []string
	seq     int32
	bytes   []byte
	attempt int
}

func (p *Producer) Name() string     { return p.name }
func (p *Producer) Incarnation() int { return 0 }
func (p *Producer) Up() bool         { return true }

func (p *Producer) start() {
	p.pid = -1
	p.initProducer()
}

func (p *Producer) initProducer() {
	a := p.w.agents[p.w.rng.Intn(len(p.w.agents))]
	p.w.ops++
	p.w.net.Send(p, a, "init producer", func() {
		a.initProducer(func(r *sequencer.InitProducerReply) {
			p.w.net.Send(a, p, "init producer reply", func() {
				if p.pid < 0 && r.Err == 0 {
					p.pid = r.ProducerID
					p.w.logf("%s has producer id %d", p.name, p.pid)
					p.loop()
				}
			})
		})
	})
	p.w.after(requestTimeout, p.name+" init timeout", func() {
		if p.pid < 0 {
			p.initProducer()
		}
	})
}

// loop starts a batch on every idle partition, then comes back later.
func (p *Producer) loop() {
	for _, pp := range p.parts {
		if pp.inflight == nil && p.budget > 0 && !p.w.liveness {
			n := min(1+p.w.rng.Intn(4), p.budget)
			p.budget -= n
			b := &prodBatch{seq: pp.seq}
			values := make([][]byte, n)
			for i := range values {
				id := fmt.Sprintf("%s-%d", p.name, p.nextID)
				p.nextID++
				b.ids = append(b.ids, id)
				values[i] = []byte(id)
				p.w.check.attempted(id)
			}
			b.bytes = codectest.Batch(codectest.BatchSpec{Values: values, ProducerID: p.pid, BaseSequence: pp.seq,
				BaseTimestamp: int64(p.w.now / time.Millisecond)})
			pp.inflight = b
			p.send(pp, b)
		}
	}
	p.w.after(p.w.between(time.Millisecond, 20*time.Millisecond), p.name+" loop", p.loop)
}

func (p *Producer) send(pp *prodPart, b *prodBatch) {
	b.attempt++
	attempt := b.attempt
	a := p.w.agents[p.w.rng.Intn(len(p.w.agents))]
	p.w.ops++
	p.w.net.Send(p, a, "produce", func() {
		a.produce(topic, pp.partition, b.bytes, func(r sequencer.BatchResult) {
			p.w.net.Send(a, p, "produce reply", func() { p.onReply(pp, b, attempt, r) })
		})
	})
	p.w.after(requestTimeout, p.name+" produce timeout", func() {
		if pp.inflight == b && b.attempt == attempt {
			p.retry(pp, b)
		}
	})
}

func (p *Producer) retry(pp *prodPart, b *prodBatch) {
	p.w.after(p.w.between(time.Millisecond, 50*time.Millisecond), p.name+" retry", func() {
		if pp.inflight == b {
			p.send(pp, b)
		}
	})
}

func (p *Producer) onReply(pp *prodPart, b *prodBatch, attempt int, r sequencer.BatchResult) {
	if pp.inflight != b || b.attempt != attempt {
		return // a late reply to an attempt already retried
	}
	if r.Err != 0 {
		p.retry(pp, b)
		return
	}
	for i, id := range b.ids {
		p.w.check.acked(id, pp.partition, r.BaseOffset+int64(i))
	}
	pp.seq += int32(len(b.ids))
	pp.inflight = nil
}

// done reports whether every record the producer made was acknowledged.
func (p *Producer) done() bool {
	if p.pid < 0 {
		return false
	}
	for _, pp := range p.parts {
		if pp.inflight != nil {
			return false
		}
	}
	return true
}

// Consumer reads every partition from offset 0 by plain fetches at random
// agents, and checks what it sees: offsets follow on from its position with
// no skip, and the high watermark never goes back.
type Consumer struct {
	w    *World
	name string
	pos  []int64
	hwm  []int64
	next int
}

func (c *Consumer) Name() string     { return c.name }
func (c *Consumer) Incarnation() int { return 0 }
func (c *Consumer) Up() bool         { return true }

func (c *Consumer) loop() {
	p := int32(c.next % len(c.pos))
	c.next++
	c.poll(p)
	c.w.after(c.w.between(time.Millisecond, 15*time.Millisecond), c.name+" loop", c.loop)
}

func (c *Consumer) poll(p int32) {
	a := c.w.agents[c.w.rng.Intn(len(c.w.agents))]
	offset := c.pos[p]
	c.w.ops++
	c.w.net.Send(c, a, "fetch", func() {
		a.fetch(topic, p, offset, func(r fetchResult) {
			c.w.net.Send(a, c, "fetch reply", func() { c.onFetch(a, p, offset, r) })
		})
	})
}

func (c *Consumer) onFetch(a *AgentProc, p int32, offset int64, r fetchResult) {
	if r.err != 0 {
		c.w.logf("%s: fetch partition %d at %d from %s: error %d", c.name, p, offset, a.name, r.err)
		return
	}
	if c.pos[p] != offset {
		return // a stale reply to an earlier position
	}
	if r.hwm < c.hwm[p] {
		c.w.check.violation("%s: high watermark of partition %d went back from %d to %d (read from %s)", c.name, p, c.hwm[p], r.hwm, a.name)
	}
	c.hwm[p] = max(c.hwm[p], r.hwm)
	for _, raw := range r.batches {
		c.readBatch(p, raw)
	}
}

func (c *Consumer) readBatch(p int32, raw []byte) {
	c.pos[p] = readRecords(c.w, c.name, p, raw, c.pos[p])
}

// readRecords checks and records the records of one fetched batch for a
// reader at position pos, and returns its new position. A batch may begin
// before pos; past pos the offsets must follow on exactly.
func readRecords(w *World, reader string, p int32, raw []byte, pos int64) int64 {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		w.check.violation("%s: undecodable batch on partition %d: %v", reader, p, err)
		return pos
	}
	in := rb.Records
	for i := int32(0); i < rb.NumRecords; i++ {
		length, used := kbin.Varint(in)
		total := used + int(length)
		var rec kmsg.Record
		if used == 0 || length < 0 || len(in) < total || rec.ReadFrom(in[:total]) != nil {
			w.check.violation("%s: undecodable record %d of a batch on partition %d", reader, i, p)
			return pos
		}
		in = in[total:]
		off := rb.FirstOffset + int64(rec.OffsetDelta)
		switch {
		case off < pos:
			continue // the batch began before our position
		case off > pos:
			w.check.violation("%s: poll skip on partition %d: expected offset %d, got %d", reader, p, pos, off)
		}
		w.check.read(string(rec.Value), p, off)
		pos = off + 1
	}
	return pos
}
