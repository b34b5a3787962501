package sequencer

import "github.com/twmb/franz-go/pkg/kmsg"

// Requests an agent sends the sequencer, and the replies it gets. Each request
// names one thing to decide; the agent fans a Kafka request out into several
// and gathers the replies.

// Request is one input to Step. Body is one of the *…Request types below.
type Request struct {
	ID   uint64 // chosen by the caller, echoed in the Reply
	Body any
}

// Reply answers the Request with the same ID. Body is the matching *…Reply.
type Reply struct {
	ID   uint64
	Body any
	// Entry is the log entry the reply rests on: it and every entry before
	// it are durable. The simulator checks that it is this sequencer's own.
	Entry uint64
}

// CommitRequest orders the batches an agent stored in one data object.
type CommitRequest struct {
	Object  string
	Batches []BatchCommit
}

// BatchCommit describes one producer batch inside the object.
type BatchCommit struct {
	Topic         string
	Partition     int32
	Pos, Len      int64
	Records       int32
	MaxTimestamp  int64
	ProducerID    int64 // -1 when not idempotent
	ProducerEpoch int16
	BaseSequence  int32
}

// CommitReply has one result per batch, in request order.
type CommitReply struct {
	Results []BatchResult
}

// BatchResult is the outcome of one batch: a Kafka error code, and on success
// the base offset the batch got (its original one when it was a retry).
type BatchResult struct {
	Err        int16
	BaseOffset int64
	LogStart   int64
	Dup        bool // a retry of a batch already ordered: BaseOffset is the original one
}

// CreateTopicRequest creates a topic, or with ValidateOnly only checks it.
type CreateTopicRequest struct {
	Name         string
	Partitions   int32
	Configs      map[string]string
	ValidateOnly bool
}

// DeleteTopicRequest deletes a topic.
type DeleteTopicRequest struct {
	Name string
}

// CreatePartitionsRequest grows a topic to Count partitions.
type CreatePartitionsRequest struct {
	Name         string
	Count        int32
	ValidateOnly bool
}

// TopicReply answers the three topic requests.
type TopicReply struct {
	Err     int16
	Message string
	ID      [16]byte
}

// InitProducerRequest asks for a producer id. With ProducerID >= 0 it asks to
// bump the epoch of that producer (KIP-360), as a client does after a
// sequence error.
type InitProducerRequest struct {
	ProducerID int64
	Epoch      int16
}

// InitProducerReply carries the id and epoch the producer must use.
type InitProducerReply struct {
	Err        int16
	ProducerID int64
	Epoch      int16
}

// Accepts reports whether body is a request the sequencer decides: a driver
// that takes requests from the network checks this first, since Step
// assumes its callers send only these.
func Accepts(body any) bool {
	switch body.(type) {
	case *CommitRequest, *CreateTopicRequest, *DeleteTopicRequest, *CreatePartitionsRequest, *InitProducerRequest,
		*kmsg.OffsetFetchRequest, *kmsg.DeleteGroupsRequest, *kmsg.OffsetDeleteRequest:
		return true
	}
	return isGroupRequest(body)
}
