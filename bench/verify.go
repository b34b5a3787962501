package bench

import (
	"fmt"
	"math/bits"
	"sort"
	"sync"
)

// seqSet is a growable bitmap of a writer's sequence numbers.
type seqSet struct {
	words []uint64
}

// seqMax bounds the sequence numbers a set takes (64 G records, 8 GiB of
// bitmap): a larger one is not from this generator, checksum or not.
const seqMax = 1 << 36

// add sets seq and reports whether it was already set.
func (s *seqSet) add(seq uint64) (dup bool) {
	w := int(seq / 64)
	if w >= len(s.words) {
		s.words = append(s.words, make([]uint64, w+1-len(s.words)+len(s.words)/2)...)
	}
	bit := uint64(1) << (seq % 64)
	dup = s.words[w]&bit != 0
	s.words[w] |= bit
	return dup
}

// count is how many sequence numbers are set.
func (s *seqSet) count() int64 {
	var n int
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}

// span is one more than the highest sequence number set, or 0.
func (s *seqSet) span() int64 {
	for i := len(s.words) - 1; i >= 0; i-- {
		if w := s.words[i]; w != 0 {
			return int64(i*64 + bits.Len64(w))
		}
	}
	return 0
}

// merge sets o's members in s and returns how many were set in both.
func (s *seqSet) merge(o *seqSet) (both int64) {
	if len(o.words) > len(s.words) {
		s.words = append(s.words, make([]uint64, len(o.words)-len(s.words))...)
	}
	for i, w := range o.words {
		both += int64(bits.OnesCount64(s.words[i] & w))
		s.words[i] |= w
	}
	return both
}

// minus counts the members of s that are not in o.
func (s *seqSet) minus(o *seqSet) int64 {
	var n int64
	for i, w := range s.words {
		if i < len(o.words) {
			w &^= o.words[i]
		}
		n += int64(bits.OnesCount64(w))
	}
	return n
}

// AckedSet is the producers' record of acknowledged sequence numbers, per
// writer. franz-go calls promises from more than one goroutine, hence the
// lock; it is only taken when the run verifies. Read it (Report) only once
// the producers are done.
type AckedSet struct {
	mu      sync.Mutex
	writers map[uint64]*seqSet
}

// NewAckedSet returns an empty set.
func NewAckedSet() *AckedSet { return &AckedSet{writers: map[uint64]*seqSet{}} }

// Add records that writer's record seq was acknowledged.
func (a *AckedSet) Add(writer, seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.writers[writer]
	if s == nil {
		s = &seqSet{}
		a.writers[writer] = s
	}
	s.add(seq)
}

// VerifyReport is what reading the records back found.
type VerifyReport struct {
	// Records is how many load records were read, with a valid checksum.
	Records int64 `json:"records"`
	// Foreign values were not written by this generator (another
	// producer shares the topic); they are not checked.
	Foreign int64 `json:"foreign"`
	// BadChecksum values carry the header but their bytes changed.
	BadChecksum int64 `json:"bad_checksum"`
	// OutOfOrder counts records whose sequence number was not above the
	// previous one of the same writer in the same partition.
	OutOfOrder int64 `json:"out_of_order"`
	// Duplicates counts records read more than once (same writer and
	// sequence number).
	Duplicates int64 `json:"duplicates"`
	// Acked is how many records the producers saw acknowledged, and
	// Missing how many of those were never read. Both are -1 when the
	// acknowledged set is unknown (a consume of an older topic, or acks=0).
	Acked   int64 `json:"acked"`
	Missing int64 `json:"missing"`
	// Gaps counts the sequence numbers, below a writer's highest one read,
	// that were never read: records that failed, or that were lost.
	Gaps    int64 `json:"gaps"`
	Writers int   `json:"writers"`
	// ReadEverything says the consumers reached the end of what was
	// produced; Missing counts as a failure only then.
	ReadEverything bool `json:"read_everything"`
	// Problems says, in words, what broke the guarantees the run expected;
	// empty when the check passed.
	Problems []string `json:"problems"`
}

// OK reports whether nothing broke the guarantees the run expected.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

func (r *VerifyReport) String() string {
	s := fmt.Sprintf("verify: %d records read from %d writers; %d bad checksums, %d out of order, %d duplicates, %d gaps, %d foreign",
		r.Records, r.Writers, r.BadChecksum, r.OutOfOrder, r.Duplicates, r.Gaps, r.Foreign)
	switch {
	case r.Acked >= 0 && r.ReadEverything:
		s += fmt.Sprintf("; %d acked, %d of them missing", r.Acked, r.Missing)
	case r.Acked >= 0:
		s += fmt.Sprintf("; %d acked, %d of them not reached (the consumers stopped early)", r.Acked, r.Missing)
	}
	if r.OK() {
		return s + ": OK"
	}
	return s + fmt.Sprintf(": FAILED (%v)", r.Problems)
}

// orderKey names one writer's records in one partition, the unit in which
// Kafka promises order.
type orderKey struct {
	partition int32
	writer    uint64
}

// Verifier checks load records as a consumer reads them: each one's
// checksum, order per writer within each partition, and which sequence
// numbers arrived. Not safe for concurrent use: give each consumer client
// its own, over disjoint partitions, and Merge them at the end.
type Verifier struct {
	next map[orderKey]uint64 // one past the last sequence number read
	seen map[uint64]*seqSet
	rep  VerifyReport
}

// NewVerifier returns an empty verifier.
func NewVerifier() *Verifier {
	return &Verifier{next: map[orderKey]uint64{}, seen: map[uint64]*seqSet{}}
}

// Observe checks one record read from partition and returns its header;
// ok is false for foreign or damaged values.
func (v *Verifier) Observe(partition int32, value []byte) (h RecordHeader, ok bool) {
	h, err := DecodeValue(value)
	switch {
	case err == errChecksum:
		v.rep.BadChecksum++
		return h, false
	case err != nil || h.Seq >= seqMax:
		v.rep.Foreign++
		return h, false
	}
	v.rep.Records++
	k := orderKey{partition, h.Writer}
	if next, ok := v.next[k]; ok && h.Seq < next {
		v.rep.OutOfOrder++
	} else {
		v.next[k] = h.Seq + 1
	}
	s := v.seen[h.Writer]
	if s == nil {
		s = &seqSet{}
		v.seen[h.Writer] = s
	}
	if s.add(h.Seq) {
		v.rep.Duplicates++
	}
	return h, true
}

// Merge folds o, which read other partitions, into v.
func (v *Verifier) Merge(o *Verifier) {
	for k, n := range o.next {
		if _, clash := v.next[k]; clash {
			panic(fmt.Sprintf("bench: partition %d read by two verifiers", k.partition))
		}
		v.next[k] = n
	}
	for w, s := range o.seen {
		if mine := v.seen[w]; mine != nil {
			v.rep.Duplicates += mine.merge(s)
		} else {
			v.seen[w] = s
		}
	}
	v.rep.Records += o.rep.Records
	v.rep.Foreign += o.rep.Foreign
	v.rep.BadChecksum += o.rep.BadChecksum
	v.rep.OutOfOrder += o.rep.OutOfOrder
	v.rep.Duplicates += o.rep.Duplicates
}

// Expect says which guarantees Report holds the records to.
type Expect struct {
	// Acked, when known, is every record the producers saw acknowledged:
	// each must have been read.
	Acked *AckedSet
	// Exactly once and in order: true for idempotent producers, whose
	// retries can neither duplicate nor reorder.
	ExactlyOnceInOrder bool
	// ReadEverything says the consumers reached the end of what was
	// produced; if they stopped early, missing records are no failure.
	ReadEverything bool
}

// Report returns what was found, judged against exp.
func (v *Verifier) Report(exp Expect) VerifyReport {
	rep := v.rep
	rep.Writers = len(v.seen)
	rep.ReadEverything = exp.ReadEverything
	rep.Acked, rep.Missing = -1, -1
	writers := make([]uint64, 0, len(v.seen))
	for w := range v.seen {
		writers = append(writers, w)
	}
	sort.Slice(writers, func(i, j int) bool { return writers[i] < writers[j] })
	for _, w := range writers {
		s := v.seen[w]
		rep.Gaps += s.span() - s.count()
	}
	if exp.Acked != nil {
		rep.Acked, rep.Missing = 0, 0
		empty := &seqSet{}
		for w, acked := range exp.Acked.writers {
			rep.Acked += acked.count()
			seen := v.seen[w]
			if seen == nil {
				seen = empty
			}
			rep.Missing += acked.minus(seen)
		}
	}
	if rep.BadChecksum > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d records changed between producer and consumer", rep.BadChecksum))
	}
	if rep.Missing > 0 && exp.ReadEverything {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d acknowledged records were never read", rep.Missing))
	}
	if exp.ExactlyOnceInOrder && rep.Duplicates > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d records read twice", rep.Duplicates))
	}
	if exp.ExactlyOnceInOrder && rep.OutOfOrder > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d records out of order within their partition", rep.OutOfOrder))
	}
	return rep
}
