package sequencer

import (
	"encoding/json"
	"fmt"
)

// Entry is one metadata-log entry: the object meta/log/<Index>. It records
// outcomes, not requests: replaying an entry never re-validates anything, it
// only applies what the sequencer decided, so every replica that applies the
// same entries reaches the same state.
type Entry struct {
	// Writer names the sequencer incarnation that wrote the entry. It makes
	// entries from two sequencers differ byte for byte, which is how an
	// ambiguous append is resolved: re-read entry N and compare.
	Writer string `json:"w"`
	Ops    []Op   `json:"ops,omitempty"`
}

// Op is one state change. Exactly one field is set.
type Op struct {
	Epoch            *EpochOp            `json:"epoch,omitempty"`
	Batch            *BatchOp            `json:"b,omitempty"`
	CreateTopic      *CreateTopicOp      `json:"ct,omitempty"`
	DeleteTopic      *DeleteTopicOp      `json:"dt,omitempty"`
	CreatePartitions *CreatePartitionsOp `json:"cp,omitempty"`
	InitProducer     *InitProducerOp     `json:"ip,omitempty"`
	OffsetCommit     *OffsetCommitOp     `json:"oc,omitempty"`
	DeleteGroup      *DeleteGroupOp      `json:"dg,omitempty"`
	OffsetDelete     *OffsetDeleteOp     `json:"od,omitempty"`
}

// OffsetCommitOp records a consumer group's committed offsets.
type OffsetCommitOp struct {
	Group   string              `json:"g"`
	Offsets []OffsetCommitEntry `json:"offsets"`
}

// OffsetCommitEntry is one partition's committed offset.
type OffsetCommitEntry struct {
	Topic       string `json:"t"`
	Partition   int32  `json:"p"`
	Offset      int64  `json:"o"`
	LeaderEpoch int32  `json:"e"`
	Metadata    string `json:"m,omitempty"`
}

// DeleteGroupOp forgets a group's committed offsets.
type DeleteGroupOp struct {
	Group string `json:"g"`
}

// OffsetDeleteOp forgets some of a group's committed offsets.
type OffsetDeleteOp struct {
	Group      string  `json:"g"`
	Topic      string  `json:"t"`
	Partitions []int32 `json:"p"`
}

// EpochOp is appended by a sequencer when it takes over. Agents find the
// active sequencer through the newest one.
type EpochOp struct {
	Epoch uint64 `json:"e"`
	Owner string `json:"o"`
	Addr  string `json:"a,omitempty"`
}

// BatchOp orders one producer batch stored in a data object.
type BatchOp struct {
	Topic         string `json:"t"`
	Partition     int32  `json:"p"`
	BaseOffset    int64  `json:"o"` // asserted equal to the partition's next offset on apply
	Records       int32  `json:"n"`
	Object        string `json:"k"`
	Pos           int64  `json:"pos"`
	Len           int64  `json:"len"`
	MaxTimestamp  int64  `json:"ts"`
	ProducerID    int64  `json:"pid,omitempty"`
	ProducerEpoch int16  `json:"pe,omitempty"`
	BaseSequence  int32  `json:"seq,omitempty"`
}

// CreateTopicOp creates a topic. ID is derived deterministically by the
// sequencer so that replay reproduces it.
type CreateTopicOp struct {
	Name       string            `json:"name"`
	ID         [16]byte          `json:"id"`
	Partitions int32             `json:"parts"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// DeleteTopicOp deletes a topic; its data objects become garbage.
type DeleteTopicOp struct {
	Name string `json:"name"`
}

// CreatePartitionsOp raises a topic's partition count to Count.
type CreatePartitionsOp struct {
	Name  string `json:"name"`
	Count int32  `json:"count"`
}

// InitProducerOp hands out a producer id and epoch.
type InitProducerOp struct {
	ProducerID int64 `json:"pid"`
	Epoch      int16 `json:"epoch"`
}

// MarshalEntry encodes an entry for the object store.
func MarshalEntry(e *Entry) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("sequencer: entry does not encode: %v", err)) // only plain data: impossible
	}
	return b
}

// UnmarshalEntry decodes an entry read from the object store.
func UnmarshalEntry(b []byte) (*Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("sequencer: corrupt log entry: %w", err)
	}
	return &e, nil
}

// LogKey is the object key of log entry index.
func LogKey(index uint64) string { return fmt.Sprintf("meta/log/%020d", index) }

// SnapKey is the object key of the snapshot taken after entry index.
func SnapKey(index uint64) string { return fmt.Sprintf("meta/snap/%020d", index) }

// Prefixes of the metadata objects, for LIST.
const (
	LogPrefix  = "meta/log/"
	SnapPrefix = "meta/snap/"
)

// ParseIndexKey returns the entry index encoded in a log or snapshot key.
func ParseIndexKey(key, prefix string) (uint64, bool) {
	if len(key) != len(prefix)+20 || key[:len(prefix)] != prefix {
		return 0, false
	}
	var n uint64
	for _, c := range key[len(prefix):] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
