package sequencer

import (
	"encoding/json"
	"fmt"
	"sort"
)

// producerWindowMax is how many recent batches are remembered per producer
// and partition, as in Kafka: a client has at most 5 requests in flight, so a
// retry always finds its original batch among the last 5.
const producerWindowMax = 5

// State is everything the metadata log describes. The sequencer holds the
// authoritative copy; every agent holds a replica built from a snapshot plus
// the entries pushed to it. Apply is the only mutator, so both stay identical.
//
// State is not safe for concurrent use.
type State struct {
	Index          uint64            `json:"index"` // last applied entry
	Epoch          EpochOp           `json:"epoch"` // newest epoch entry
	NextProducerID int64             `json:"next_pid"`
	ProducerEpochs map[int64]int16   `json:"producer_epochs"`
	Topics         map[string]*Topic `json:"topics"`
	// Groups holds consumer groups' committed offsets; membership is in
	// memory only (package group).
	Groups map[string]*GroupOffsets `json:"groups,omitempty"`
}

// GroupOffsets is one consumer group's committed offsets by topic and
// partition.
type GroupOffsets struct {
	Topics map[string]map[int32]CommittedOffset `json:"topics"`
}

// CommittedOffset is one committed position.
type CommittedOffset struct {
	Offset      int64  `json:"o"`
	LeaderEpoch int32  `json:"e"`
	Metadata    string `json:"m,omitempty"`
}

// Committed returns a group's committed offset for a partition.
func (s *State) Committed(group, topic string, partition int32) (CommittedOffset, bool) {
	g := s.Groups[group]
	if g == nil {
		return CommittedOffset{}, false
	}
	c, ok := g.Topics[topic][partition]
	return c, ok
}

// Topic is a named set of partitions.
type Topic struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Configs    map[string]string `json:"configs,omitempty"`
	Partitions []*Partition      `json:"partitions"`
}

// Config returns a topic-level config the topic was created with. It is
// safe on a nil topic.
func (t *Topic) Config(name string) (string, bool) {
	if t == nil {
		return "", false
	}
	v, ok := t.Configs[name]
	return v, ok
}

// Partition is one ordered log: an index from offsets to stored batches.
type Partition struct {
	// Next is the offset the next batch gets: the high watermark.
	Next      int64                     `json:"next"`
	LogStart  int64                     `json:"log_start"`
	Index     []IndexEntry              `json:"index"`
	Producers map[int64]*ProducerWindow `json:"producers,omitempty"`
}

// IndexEntry locates one batch: offsets [BaseOffset, BaseOffset+Records)
// are the bytes [Pos, Pos+Len) of Object.
type IndexEntry struct {
	BaseOffset   int64  `json:"o"`
	Records      int32  `json:"n"`
	Object       string `json:"k"`
	Pos          int64  `json:"pos"`
	Len          int64  `json:"len"`
	MaxTimestamp int64  `json:"ts"`
}

// LastOffset is the offset of the batch's last record.
func (e *IndexEntry) LastOffset() int64 { return e.BaseOffset + int64(e.Records) - 1 }

// ProducerWindow is an idempotent producer's recent history on a partition.
type ProducerWindow struct {
	Epoch   int16      `json:"epoch"`
	Batches []SeqRange `json:"batches"` // oldest first, at most producerWindowMax
}

// SeqRange is one accepted batch: sequences [First, Last] got BaseOffset.
type SeqRange struct {
	First      int32  `json:"first"`
	Last       int32  `json:"last"`
	BaseOffset int64  `json:"offset"`
	Entry      uint64 `json:"entry"` // the log entry that ordered it
}

// NewState returns the state before the first entry.
func NewState() *State {
	return &State{ProducerEpochs: map[int64]int16{}, Topics: map[string]*Topic{}, NextProducerID: 1}
}

// Partition returns the partition, or nil if the topic or partition does not exist.
func (s *State) Partition(topic string, partition int32) *Partition {
	t := s.Topics[topic]
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[partition]
}

// TopicNames returns the topic names in sorted order, so that callers never
// depend on map order.
func (s *State) TopicNames() []string {
	names := make([]string, 0, len(s.Topics))
	for n := range s.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Apply applies entry index. Entries must be applied in order, each once.
func (s *State) Apply(index uint64, e *Entry) error {
	if index != s.Index+1 {
		return fmt.Errorf("sequencer: entry %d applied after %d", index, s.Index)
	}
	for i := range e.Ops {
		if err := s.applyOp(index, &e.Ops[i]); err != nil {
			return fmt.Errorf("sequencer: entry %d op %d: %w", index, i, err)
		}
	}
	s.Index = index
	return nil
}

func (s *State) applyOp(index uint64, op *Op) error {
	switch {
	case op.Epoch != nil:
		if op.Epoch.Epoch <= s.Epoch.Epoch {
			return fmt.Errorf("epoch %d does not advance %d", op.Epoch.Epoch, s.Epoch.Epoch)
		}
		s.Epoch = *op.Epoch
	case op.Batch != nil:
		return s.applyBatch(index, op.Batch)
	case op.CreateTopic != nil:
		c := op.CreateTopic
		if s.Topics[c.Name] != nil {
			return fmt.Errorf("topic %q exists", c.Name)
		}
		t := &Topic{Name: c.Name, ID: c.ID, Configs: c.Configs}
		t.grow(c.Partitions)
		s.Topics[c.Name] = t
	case op.DeleteTopic != nil:
		if s.Topics[op.DeleteTopic.Name] == nil {
			return fmt.Errorf("topic %q does not exist", op.DeleteTopic.Name)
		}
		delete(s.Topics, op.DeleteTopic.Name)
	case op.CreatePartitions != nil:
		t := s.Topics[op.CreatePartitions.Name]
		if t == nil || int(op.CreatePartitions.Count) <= len(t.Partitions) {
			return fmt.Errorf("bad partition growth for %q", op.CreatePartitions.Name)
		}
		t.grow(op.CreatePartitions.Count)
	case op.OffsetCommit != nil:
		s.applyOffsetCommit(op.OffsetCommit)
	case op.DeleteGroup != nil:
		delete(s.Groups, op.DeleteGroup.Group)
	case op.OffsetDelete != nil:
		if g := s.Groups[op.OffsetDelete.Group]; g != nil {
			for _, p := range op.OffsetDelete.Partitions {
				delete(g.Topics[op.OffsetDelete.Topic], p)
			}
			if len(g.Topics[op.OffsetDelete.Topic]) == 0 {
				delete(g.Topics, op.OffsetDelete.Topic)
			}
		}
	case op.InitProducer != nil:
		ip := op.InitProducer
		s.ProducerEpochs[ip.ProducerID] = ip.Epoch
		if ip.ProducerID >= s.NextProducerID {
			s.NextProducerID = ip.ProducerID + 1
		}
	default:
		return fmt.Errorf("empty op")
	}
	return nil
}

func (s *State) applyOffsetCommit(c *OffsetCommitOp) {
	if s.Groups == nil {
		s.Groups = map[string]*GroupOffsets{}
	}
	g := s.Groups[c.Group]
	if g == nil {
		g = &GroupOffsets{Topics: map[string]map[int32]CommittedOffset{}}
		s.Groups[c.Group] = g
	}
	for _, o := range c.Offsets {
		t := g.Topics[o.Topic]
		if t == nil {
			t = map[int32]CommittedOffset{}
			g.Topics[o.Topic] = t
		}
		t[o.Partition] = CommittedOffset{Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata}
	}
}

func (t *Topic) grow(count int32) {
	for len(t.Partitions) < int(count) {
		t.Partitions = append(t.Partitions, &Partition{})
	}
}

func (s *State) applyBatch(index uint64, b *BatchOp) error {
	p := s.Partition(b.Topic, b.Partition)
	if p == nil {
		return fmt.Errorf("batch for missing partition %s/%d", b.Topic, b.Partition)
	}
	if b.BaseOffset != p.Next || b.Records <= 0 {
		// Offsets are dense and assigned once: a gap or overlap here means
		// the sequencer computed a wrong entry. Never paper over it.
		return fmt.Errorf("batch base offset %d records %d, partition %s/%d expects %d",
			b.BaseOffset, b.Records, b.Topic, b.Partition, p.Next)
	}
	p.Index = append(p.Index, IndexEntry{
		BaseOffset: b.BaseOffset, Records: b.Records, Object: b.Object,
		Pos: b.Pos, Len: b.Len, MaxTimestamp: b.MaxTimestamp,
	})
	p.Next += int64(b.Records)
	if b.ProducerID >= 0 {
		p.remember(index, b)
	}
	return nil
}

func (p *Partition) remember(index uint64, b *BatchOp) {
	if p.Producers == nil {
		p.Producers = map[int64]*ProducerWindow{}
	}
	w := p.Producers[b.ProducerID]
	if w == nil || w.Epoch != b.ProducerEpoch {
		w = &ProducerWindow{Epoch: b.ProducerEpoch}
		p.Producers[b.ProducerID] = w
	}
	if len(w.Batches) == producerWindowMax {
		copy(w.Batches, w.Batches[1:])
		w.Batches = w.Batches[:producerWindowMax-1]
	}
	w.Batches = append(w.Batches, SeqRange{
		First: b.BaseSequence, Last: addSeq(b.BaseSequence, b.Records-1),
		BaseOffset: b.BaseOffset, Entry: index,
	})
}

// addSeq adds to a producer sequence, which wraps from MaxInt32 to 0.
func addSeq(seq, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (1 << 31))
}

// Find returns the position in p.Index of the batch holding offset, or
// len(p.Index) if offset is at or past the high watermark.
func (p *Partition) Find(offset int64) int {
	return sort.Search(len(p.Index), func(i int) bool { return p.Index[i].LastOffset() >= offset })
}

// FindTimestamp returns the first batch whose max timestamp is >= ts, or
// len(p.Index) if none.
func (p *Partition) FindTimestamp(ts int64) int {
	for i := range p.Index {
		if p.Index[i].MaxTimestamp >= ts {
			return i
		}
	}
	return len(p.Index)
}

// Marshal encodes the state as a snapshot.
func (s *State) Marshal() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("sequencer: state does not encode: %v", err))
	}
	return b
}

// UnmarshalState decodes a snapshot.
func UnmarshalState(b []byte) (*State, error) {
	s := NewState()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("sequencer: corrupt snapshot: %w", err)
	}
	if s.ProducerEpochs == nil {
		s.ProducerEpochs = map[int64]int16{}
	}
	if s.Topics == nil {
		s.Topics = map[string]*Topic{}
	}
	return s, nil
}
