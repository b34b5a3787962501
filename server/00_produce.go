package server

// Produce, versions 3 to 11 (v3 is the first with RecordBatch v2 only; v13
// names topics by id and is not served).
//
// Each partition's records must be exactly one valid RecordBatch: only its
// header and CRC are checked, records are never decoded. Valid batches go to
// the flush window; the response is sent when every one of them is ordered by
// the sequencer, which happens only after the data object and the log entry
// are durable. acks=1 behaves as acks=-1. acks=0 gets no response.

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.ProduceRequest), 3, 11, handleProduce) }

func handleProduce(a *Agent, c *call) {
	req := c.req.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	names := make([]string, len(req.Topics))
	for i := range req.Topics {
		names[i] = req.Topics[i].Topic
	}
	a.ensureTopics(names, a.cfg.AutoCreateTopics, func() { a.produce(c, req, resp) })
}

func (a *Agent) produce(c *call, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
	if req.TransactionID != nil {
		a.answerAllProduce(c, req, resp, kerr.TransactionalIDAuthorizationFailed.Code)
		return
	}
	// outstanding counts the batches not yet answered, plus one for this
	// loop, so the response cannot go out before every batch was queued.
	var outstanding atomic.Int64
	outstanding.Store(1)
	finish := func() {
		if outstanding.Add(-1) != 0 {
			return
		}
		if req.Acks == 0 {
			c.respond(nil)
		} else {
			c.respond(resp)
		}
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			commit, code := a.validateBatch(rt.Topic, rp.Partition, rp.Records)
			if code != 0 {
				sp.ErrorCode = code
				continue
			}
			outstanding.Add(1)
			a.appendBatch(rp.Records, commit, func(r sequencer.BatchResult) {
				sp.ErrorCode, sp.BaseOffset, sp.LogStartOffset = r.Err, r.BaseOffset, r.LogStart
				if r.Err != 0 {
					sp.BaseOffset = -1
				}
				finish()
			})
		}
	}
	// Every batch is copied into the flush buffer: the request's bytes are
	// not needed while it waits for its acknowledgement.
	c.releaseRequest()
	finish()
}

// validateBatch checks one partition's records and describes the batch for
// the sequencer. It returns a Kafka error code for a bad batch.
func (a *Agent) validateBatch(topic string, partition int32, records []byte) (sequencer.BatchCommit, int16) {
	var exists bool
	maxBytes := int(a.cfg.MaxMessageBytes)
	a.view(func(st *sequencer.State) {
		exists = st.Partition(topic, partition) != nil
		if v, ok := st.Topics[topic].Config("max.message.bytes"); exists && ok {
			if n, err := strconv.Atoi(v); err == nil {
				maxBytes = n
			}
		}
	})
	if !exists {
		return sequencer.BatchCommit{}, kerr.UnknownTopicOrPartition.Code
	}
	if len(records) > maxBytes {
		return sequencer.BatchCommit{}, kerr.MessageTooLarge.Code
	}
	b, err := codec.ParseBatch(records)
	switch {
	case errors.Is(err, codec.ErrBatchCount):
		return sequencer.BatchCommit{}, kerr.InvalidRecord.Code
	case err != nil:
		return sequencer.BatchCommit{}, kerr.CorruptMessage.Code
	case b.NumRecords() == 0:
		return sequencer.BatchCommit{}, kerr.InvalidRecord.Code
	case b.IsTransactional() || b.IsControl():
		return sequencer.BatchCommit{}, kerr.InvalidRecord.Code // transactions are not served
	}
	return sequencer.BatchCommit{
		Topic: topic, Partition: partition,
		Records: b.NumRecords(), MaxTimestamp: b.MaxTimestamp(),
		ProducerID: b.ProducerID(), ProducerEpoch: b.ProducerEpoch(), BaseSequence: b.BaseSequence(),
	}, 0
}

func (a *Agent) answerAllProduce(c *call, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse, code int16) {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, code, -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		c.respond(nil)
		return
	}
	c.respond(resp)
}
