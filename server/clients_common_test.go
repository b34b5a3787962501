package server

// The shared half of the client compatibility tests: every client test
// produces the same planned records through an unmodified Kafka client,
// reads every partition back from offset 0 through the same client, and hands
// both sides to one verifier.
//
// A record's id is in its key, its value and a header, so whatever a client
// returns can be matched to what was produced. The ledger holds the plan and,
// as producers are acknowledged, the partition and offset each record got.
// The verifier then checks, per partition, that offsets are dense from 0 and
// strictly increasing, that every acknowledged record comes back exactly
// once at its acknowledged offset, and that key, value, headers and timestamp
// are intact. It also checks that the broker stored batches compressed with
// every codec, so a client that silently ignored its compression setting
// cannot make the test vacuous.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/objectio"
)

const (
	clientTestPartitions = 8
	clientTestRecords    = 100_000

	// clientTestTimeout bounds each phase (produce, consume) of a client
	// test. A healthy run takes seconds; the bound is only there so that a
	// hang fails with a diagnosis instead of the test binary's panic.
	clientTestTimeout = 3 * time.Minute

	// problemsShownMax bounds how many problems of one kind are printed.
	problemsShownMax = 10
)

// clientTestCodecs are the codecs records are produced with, one producer
// each, in equal shares of clientTestRecords. The names are Kafka's
// compression.type values.
var clientTestCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecAttr is the RecordBatch attribute value of each codec.
var codecAttr = map[string]int8{"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// testHeader is a record header, the same shape for every client.
type testHeader struct {
	Key   string
	Value []byte
}

// plannedRecord is one record to produce, and what the producer reported.
type plannedRecord struct {
	ID        int
	Codec     string // which producer sends it
	Seq       int    // its position in that producer's send order
	Partition int32  // where it is sent
	Key       []byte
	Value     []byte
	Headers   []testHeader
	Timestamp time.Time // millisecond precision, as Kafka keeps it

	// Set by the ledger when the producer acknowledges the record.
	acked      bool
	ackedOff   int64 // -1 if the client reports no offset
	ackedTimes int
}

// consumedRecord is one record as a consumer returned it.
type consumedRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []testHeader
	Timestamp time.Time
}

// clientTest is one client under test: how it produces the records of one
// codec, and how it reads partitions back.
type clientTest struct {
	name string
	// produce sends recs in order with the given codec and reports each
	// acknowledgement to l. It returns once all are acknowledged or failed.
	produce func(ctx context.Context, t *testing.T, addr, topic, codec string, recs []*plannedRecord, l *ledger) error
	// consume reads every partition p from offset 0 up to ends[p] (the
	// high watermark after producing) and returns the records in the order
	// each partition delivered them.
	consume func(ctx context.Context, t *testing.T, addr, topic string, ends map[int32]int64) ([]consumedRecord, error)
}

// runClientTest is the whole scenario for one client, on the mem store.
func runClientTest(t *testing.T, c clientTest) { runClientTestOn(t, c, objectio.NewMem()) }

// runClientTestOn is the whole scenario for one client on store.
func runClientTestOn(t *testing.T, c clientTest, store objectio.Store) {
	sa := startBroker(t, store, Config{AutoCreateTopics: true, DefaultPartitions: clientTestPartitions})
	topic := c.name + "-codecs"
	createTestTopic(t, sa.Addr(), topic, clientTestPartitions)

	plan := planRecords(clientTestRecords, clientTestCodecs, clientTestPartitions, time.Now().Add(-24*time.Hour))
	l := newLedger(plan)

	start := time.Now()
	produceAll(t, c, sa.Addr(), topic, plan, l)
	t.Logf("%s: produced %d records with %s in %v", c.name, len(plan), strings.Join(clientTestCodecs, ", "), time.Since(start).Round(time.Millisecond))
	l.requireAllAcked(t)

	ends := endOffsets(t, sa.Addr(), topic, clientTestPartitions)
	start = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), clientTestTimeout)
	defer cancel()
	got, err := c.consume(ctx, t, sa.Addr(), topic, ends)
	t.Logf("%s: consumed %d records in %v", c.name, len(got), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Errorf("%s consumer: %v (verifying the %d records it returned)", c.name, err, len(got))
	}
	verifyConsumed(t, plan, ends, got)
	verifyStoredCodecs(t, store, plan)
}

// produceAll runs one producer per codec concurrently.
func produceAll(t *testing.T, c clientTest, addr, topic string, plan []*plannedRecord, l *ledger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTestTimeout)
	defer cancel()
	byCodec := map[string][]*plannedRecord{}
	for _, r := range plan {
		byCodec[r.Codec] = append(byCodec[r.Codec], r)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(clientTestCodecs))
	for i, codecName := range clientTestCodecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			errs[i] = c.produce(ctx, t, addr, topic, codecName, byCodec[codecName], l)
			t.Logf("%s: producer %s sent %d records in %v", c.name, codecName, len(byCodec[codecName]), time.Since(start).Round(time.Millisecond))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s producer with codec %s: %v", c.name, clientTestCodecs[i], err)
		}
	}
}

// planRecords plans n records split in equal consecutive shares between
// codecs; record id goes to partition id % partitions. Timestamps are
// explicit and distinct (base + id ms), keys and values are distinct and
// carry the id, and every record has three headers, one of them binary.
func planRecords(n int, codecs []string, partitions int32, base time.Time) []*plannedRecord {
	base = base.Truncate(time.Millisecond)
	share := n / len(codecs)
	plan := make([]*plannedRecord, n)
	for id := range n {
		ci := min(id/share, len(codecs)-1)
		r := &plannedRecord{
			ID:        id,
			Codec:     codecs[ci],
			Seq:       id - ci*share,
			Partition: int32(id % int(partitions)),
			Key:       []byte(fmt.Sprintf("key-%06d", id)),
			Timestamp: base.Add(time.Duration(id) * time.Millisecond),
			ackedOff:  -1,
		}
		// Values vary in length and compress well, as real payloads do.
		filler := strings.Repeat("the quick brown fox jumps over the lazy dog ", 5)
		r.Value = []byte(fmt.Sprintf("value-%06d|%s|%d", id, filler[:20+id%97], id*7919))
		r.Headers = []testHeader{
			{Key: "id", Value: []byte(strconv.Itoa(id))},
			{Key: "codec", Value: []byte(r.Codec)},
			{Key: "bin", Value: []byte{0x00, byte(id), byte(id >> 8), 0xff}},
		}
		plan[id] = r
	}
	return plan
}

// recordID parses the id out of a planned key ("key-000123").
func recordID(key []byte) (int, bool) {
	s, ok := bytes.CutPrefix(key, []byte("key-"))
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(string(s))
	return id, err == nil
}

// ledger is the expected side, filled in as producers are acknowledged.
type ledger struct {
	mu       sync.Mutex
	plan     []*plannedRecord
	problems []string
}

func newLedger(plan []*plannedRecord) *ledger { return &ledger{plan: plan} }

// ack records a producer's acknowledgement of r: the partition and offset
// the client reported (offset -1 if it reports none), or its error. Safe for
// concurrent use.
func (l *ledger) ack(r *plannedRecord, partition int32, offset int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.problems = append(l.problems, fmt.Sprintf("record %d (%s, partition %d): produce failed: %v", r.ID, r.Codec, r.Partition, err))
		return
	}
	r.ackedTimes++
	if r.ackedTimes > 1 {
		l.problems = append(l.problems, fmt.Sprintf("record %d acknowledged %d times; the second time at partition %d offset %d", r.ID, r.ackedTimes, partition, offset))
		return
	}
	r.acked, r.ackedOff = true, offset
	if partition != r.Partition {
		l.problems = append(l.problems, fmt.Sprintf("record %d was sent to partition %d, the producer reports partition %d", r.ID, r.Partition, partition))
	}
}

// requireAllAcked fails the test unless every planned record was
// acknowledged exactly once, without error, and each producer's
// acknowledged offsets increase in send order within a partition.
func (l *ledger) requireAllAcked(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var p problems
	for _, s := range l.problems {
		p.add("producer", s)
	}
	last := map[string]*plannedRecord{} // codec/partition -> previous acked record
	for _, r := range l.plan {
		if !r.acked {
			p.add("unacknowledged", fmt.Sprintf("record %d (%s, partition %d, seq %d) was never acknowledged", r.ID, r.Codec, r.Partition, r.Seq))
			continue
		}
		if r.ackedOff < 0 {
			continue
		}
		k := fmt.Sprintf("%s/%d", r.Codec, r.Partition)
		if prev := last[k]; prev != nil && r.ackedOff <= prev.ackedOff {
			p.add("ack order", fmt.Sprintf("producer %s, partition %d: record %d (seq %d) acknowledged at offset %d, not after record %d (seq %d) at offset %d",
				r.Codec, r.Partition, r.ID, r.Seq, r.ackedOff, prev.ID, prev.Seq, prev.ackedOff))
		}
		last[k] = r
	}
	p.fatal(t, "producing")
}

// createTestTopic creates topic through the admin API, as clients that do
// not auto-create topics need.
func createTestTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %q with %d partitions: %v", topic, partitions, err)
	}
}

// endOffsets lists the high watermark of each of the topic's partitions.
func endOffsets(t *testing.T, addr, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %q: %v", topic, err)
	}
	ends := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	if len(ends) != int(partitions) {
		t.Fatalf("list end offsets of %q: got %d partitions, want %d", topic, len(ends), partitions)
	}
	return ends
}

// verifyConsumed fails the test if what a consumer returned does not match
// the plan; see checkConsumed.
func verifyConsumed(t *testing.T, plan []*plannedRecord, ends map[int32]int64, got []consumedRecord) {
	t.Helper()
	p := checkConsumed(plan, ends, got)
	distinct := map[string]bool{}
	for _, g := range got {
		distinct[string(g.Key)] = true
	}
	p.fatal(t, fmt.Sprintf("consuming (%d records delivered, %d distinct keys, %d planned)", len(got), len(distinct), len(plan)))
}

// checkConsumed compares what a consumer returned (got, in each
// partition's delivery order) and the high watermarks after producing
// (ends) with the plan and its acknowledgements.
func checkConsumed(plan []*plannedRecord, ends map[int32]int64, got []consumedRecord) *problems {
	p := &problems{}

	// The high watermark of every partition is exactly what was produced
	// to it: nothing lost, nothing written twice.
	wantCount := map[int32]int64{}
	for _, r := range plan {
		wantCount[r.Partition]++
	}
	for part := range int32(len(ends)) {
		if ends[part] != wantCount[part] {
			p.add("high watermark", fmt.Sprintf("partition %d: high watermark %d, want %d (the records produced to it)", part, ends[part], wantCount[part]))
		}
	}

	// Per partition, in delivery order, offsets are 0, 1, 2, ...: strictly
	// increasing and dense, since there are no control records.
	next := map[int32]int64{}
	seen := map[int]consumedRecord{}
	for _, g := range got {
		switch want := next[g.Partition]; {
		case g.Offset != want && want == 0:
			p.add("offset order", fmt.Sprintf("partition %d: first delivered offset %d, want 0", g.Partition, g.Offset))
		case g.Offset != want:
			p.add("offset order", fmt.Sprintf("partition %d: delivered offset %d after offset %d, want %d (dense, strictly increasing from 0)",
				g.Partition, g.Offset, want-1, want))
		}
		next[g.Partition] = g.Offset + 1

		id, ok := recordID(g.Key)
		if !ok || id < 0 || id >= len(plan) {
			p.add("unknown record", fmt.Sprintf("partition %d offset %d: key %q is not a planned record", g.Partition, g.Offset, g.Key))
			continue
		}
		if prev, dup := seen[id]; dup {
			p.add("duplicate", fmt.Sprintf("record %d delivered twice: partition %d offset %d, then partition %d offset %d",
				id, prev.Partition, prev.Offset, g.Partition, g.Offset))
			continue
		}
		seen[id] = g
		for _, s := range recordDiffs(plan[id], g) {
			p.add("field mismatch", s)
		}
	}

	var lost []string
	for _, r := range plan {
		if _, ok := seen[r.ID]; !ok {
			lost = append(lost, fmt.Sprintf("record %d (%s, partition %d, acknowledged at offset %d)", r.ID, r.Codec, r.Partition, r.ackedOff))
		}
	}
	for _, s := range lost {
		p.add("lost", s)
	}
	return p
}

// recordDiffs lists how a consumed record differs from its plan.
func recordDiffs(want *plannedRecord, got consumedRecord) []string {
	var out []string
	where := fmt.Sprintf("record %d (partition %d offset %d)", want.ID, got.Partition, got.Offset)
	if got.Partition != want.Partition {
		out = append(out, fmt.Sprintf("%s: read from partition %d, produced to partition %d", where, got.Partition, want.Partition))
	}
	if want.ackedOff >= 0 && got.Offset != want.ackedOff {
		out = append(out, fmt.Sprintf("%s: read at offset %d, acknowledged at offset %d", where, got.Offset, want.ackedOff))
	}
	if !bytes.Equal(got.Key, want.Key) {
		out = append(out, fmt.Sprintf("%s: key %q, want %q", where, got.Key, want.Key))
	}
	if !bytes.Equal(got.Value, want.Value) {
		out = append(out, fmt.Sprintf("%s: value %q, want %q", where, got.Value, want.Value))
	}
	if !slices.EqualFunc(got.Headers, want.Headers, func(a, b testHeader) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
		out = append(out, fmt.Sprintf("%s: headers %s, want %s", where, formatHeaders(got.Headers), formatHeaders(want.Headers)))
	}
	if got.Timestamp.UnixMilli() != want.Timestamp.UnixMilli() {
		out = append(out, fmt.Sprintf("%s: timestamp %d ms (%v), want %d ms (%v)", where,
			got.Timestamp.UnixMilli(), got.Timestamp.UTC(), want.Timestamp.UnixMilli(), want.Timestamp.UTC()))
	}
	return out
}

func formatHeaders(hs []testHeader) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = fmt.Sprintf("%s=%q", h.Key, h.Value)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// verifyStoredCodecs reads every data object back from the store and checks
// that the batches the broker keeps are compressed with every codec used:
// at least half of each codec's records must sit in batches of that codec
// (clients may send a batch uncompressed when compression does not shrink
// it, and an idempotent retry may leave a second, unindexed copy).
func verifyStoredCodecs(t *testing.T, store objectio.Store, plan []*plannedRecord) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	objs, err := objectio.ListAll(ctx, store, "data/")
	if err != nil {
		t.Fatalf("list data objects: %v", err)
	}
	stored := map[int8]int64{}
	batches := map[int8]int{}
	for _, o := range objs {
		data, err := store.Get(ctx, o.Key, 0, -1)
		if err != nil {
			t.Fatalf("read data object %s: %v", o.Key, err)
		}
		n, err := codec.SplitBatches(data, func(b codec.Batch) error {
			stored[b.Compression()] += int64(b.NumRecords())
			batches[b.Compression()]++
			return nil
		})
		if err != nil || n != len(data) {
			t.Fatalf("data object %s: %d of %d bytes are whole batches: %v", o.Key, n, len(data), err)
		}
	}
	produced := map[int8]int64{}
	for _, r := range plan {
		produced[codecAttr[r.Codec]]++
	}
	var summary []string
	for _, name := range clientTestCodecs {
		attr := codecAttr[name]
		summary = append(summary, fmt.Sprintf("%s: %d records in %d batches", name, stored[attr], batches[attr]))
	}
	t.Logf("stored batches by codec: %s", strings.Join(summary, "; "))
	for _, name := range clientTestCodecs[1:] {
		attr := codecAttr[name]
		if stored[attr]*2 < produced[attr] {
			t.Errorf("codec %s: %d records stored in %s batches, want at least half of the %d produced with it (%s)",
				name, stored[attr], name, produced[attr], strings.Join(summary, "; "))
		}
	}
}

// problems collects failures by kind, and prints a bounded sample of each.
type problems struct {
	kinds  []string
	byKind map[string][]string
}

func (p *problems) add(kind, msg string) {
	if p.byKind == nil {
		p.byKind = map[string][]string{}
	}
	if _, ok := p.byKind[kind]; !ok {
		p.kinds = append(p.kinds, kind)
	}
	p.byKind[kind] = append(p.byKind[kind], msg)
}

// fatal fails the test with every kind of problem found, if any.
func (p *problems) fatal(t *testing.T, phase string) {
	t.Helper()
	if len(p.kinds) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", phase)
	sort.Strings(p.kinds)
	for _, k := range p.kinds {
		msgs := p.byKind[k]
		fmt.Fprintf(&b, "\n%d %s problem(s):", len(msgs), k)
		for i, m := range msgs {
			if i == problemsShownMax {
				fmt.Fprintf(&b, "\n\t... and %d more", len(msgs)-i)
				break
			}
			fmt.Fprintf(&b, "\n\t%s", m)
		}
	}
	t.Fatal(b.String())
}

// partitionProgress tracks, for a consumer, which partitions have reached
// their end offset.
type partitionProgress struct {
	ends map[int32]int64
	next map[int32]int64 // next offset expected per partition
}

func newPartitionProgress(ends map[int32]int64) *partitionProgress {
	return &partitionProgress{ends: ends, next: map[int32]int64{}}
}

// record notes a delivered offset.
func (pp *partitionProgress) record(partition int32, offset int64) {
	pp.next[partition] = max(pp.next[partition], offset+1)
}

// done reports whether every partition was read up to its end.
func (pp *partitionProgress) done() bool {
	for part, end := range pp.ends {
		if pp.next[part] < end {
			return false
		}
	}
	return true
}

// partDone reports whether one partition was read up to its end.
func (pp *partitionProgress) partDone(partition int32) bool {
	return pp.next[partition] >= pp.ends[partition]
}

// String says how far the unfinished partitions got, for timeouts.
func (pp *partitionProgress) String() string {
	var behind []string
	for part := range int32(len(pp.ends)) {
		if !pp.partDone(part) {
			behind = append(behind, fmt.Sprintf("p%d at %d of %d", part, pp.next[part], pp.ends[part]))
		}
	}
	shown := behind[:min(len(behind), problemsShownMax)]
	return fmt.Sprintf("%d of %d partitions not read to the end: %s", len(behind), len(pp.ends), strings.Join(shown, ", "))
}
