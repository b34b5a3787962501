package bench

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
)

// BenchmarkCodecProduce is the agent's CPU work on one Produce request
// outside any I/O, in the order it does it: find the frame, parse the
// header, decode the body (kmsg), validate each partition's batch, and
// encode the response with its base offset. codec's own
// BenchmarkValidateAndServe times one batch; this times a request's worth,
// named like the end-to-end benchmarks so the two can be compared: what is
// left of the end-to-end time is I/O and waiting.
func BenchmarkCodecProduce(b *testing.B) {
	for _, recordBytes := range e2eRecordBytes {
		for _, parts := range e2ePartitions {
			b.Run(fmt.Sprintf("record=%s/partitions=%d", sizeName(recordBytes), parts), func(b *testing.B) {
				batch, records := benchBatch(recordBytes)
				frame := produceFrameParts("codec", batch, parts)
				var out []byte
				b.SetBytes(int64(len(frame)))
				b.ReportAllocs()
				var offset int64
				for b.Loop() {
					out = produceCodecPath(b, frame, offset, out[:0])
					offset += int64(records)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(records*int(parts)), "ns/record")
			})
		}
	}
}

// produceCodecPath does what the agent's codec does with one Produce frame
// and returns the encoded response appended to out.
func produceCodecPath(b *testing.B, frame []byte, offset int64, out []byte) []byte {
	total, ok, err := codec.FrameSize(frame, codec.DefaultMaxRequestBytes)
	if err != nil || !ok || total != len(frame) {
		b.Fatalf("frame size %d ok=%v err=%v, want %d", total, ok, err, len(frame))
	}
	hdr, body, err := codec.ParseRequest(frame[4:])
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.RequestForKey(hdr.APIKey)
	req.SetVersion(hdr.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		b.Fatal(err)
	}
	produce := req.(*kmsg.ProduceRequest)
	resp := produce.ResponseKind().(*kmsg.ProduceResponse)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(produce.Topics))
	for i := range produce.Topics {
		rt, st := &produce.Topics[i], &resp.Topics[i]
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			if _, err := codec.ParseBatch(rt.Partitions[j].Records); err != nil {
				b.Fatal(err)
			}
			sp := &st.Partitions[j]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.BaseOffset = rt.Partitions[j].Partition, offset
		}
	}
	return codec.AppendResponse(out, hdr.CorrelationID, resp)
}
