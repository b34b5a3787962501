package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

func TestFetchFrameMatchesKmsg(t *testing.T) {
	b1 := codectest.Batch(codectest.BatchSpec{Records: 3, ValueBytes: 20})
	b2 := codectest.Batch(codectest.BatchSpec{Records: 1, ValueBytes: 5})
	topics := []kmsg.FetchRequestTopic{
		{Topic: "a", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}, {Partition: 1}}},
		{Topic: "bb", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 2}}},
	}
	parts := []*core.PartRead{
		{Partition: 0, HWM: 10, LogStart: 0, Batches: [][]byte{b1, b2},
			Entries: []sequencer.IndexEntry{{BaseOffset: 5, Records: 3}, {BaseOffset: 8, Records: 1}}},
		{Partition: 1, Err: 3},
		{Partition: 2},
	}
	for v := int16(4); v <= 12; v++ {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			vec, _ := encodeFetch(nil, 42, v, topics, parts)
			got := bytes.Join(vec, nil)

			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			i := 0
			for _, rt := range topics {
				ft := kmsg.NewFetchResponseTopic()
				ft.Topic = rt.Topic
				for range rt.Partitions {
					pr := parts[i]
					i++
					fp := kmsg.NewFetchResponseTopicPartition()
					fp.Partition, fp.ErrorCode = pr.Partition, pr.Err
					fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = pr.HWM, pr.HWM, pr.LogStart
					if pr.Err != 0 {
						fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = -1, -1, -1
					}
					fp.RecordBatches = []byte{} // empty, not null, as the agent writes it
					for j, b := range pr.Batches {
						fp.RecordBatches = append(fp.RecordBatches, core.Served(b, pr.Entries[j])...)
					}
					ft.Partitions = append(ft.Partitions, fp)
				}
				resp.Topics = append(resp.Topics, ft)
			}
			want := codec.AppendResponse(nil, 42, resp)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d: hand encoding differs from kmsg\n got %x\nwant %x", v, got, want)
			}
		})
	}
}

func TestFetchFrameDoesNotCopyRecords(t *testing.T) {
	b1 := codectest.Batch(codectest.BatchSpec{Records: 3, ValueBytes: 20})
	topics := []kmsg.FetchRequestTopic{{Topic: "a", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0}}}}
	parts := []*core.PartRead{{Batches: [][]byte{b1}, Entries: []sequencer.IndexEntry{{BaseOffset: 1 << 40, Records: 3}}}}
	before := bytes.Clone(b1)
	vec, _ := encodeFetch(nil, 1, 12, topics, parts)
	if !bytes.Equal(b1, before) {
		t.Fatal("encoding the response wrote into the stored batch")
	}
	rest := b1[codec.ServedHeaderSize:]
	for _, s := range vec {
		if len(s) == len(rest) && &s[0] == &rest[0] {
			return
		}
	}
	t.Fatal("the record batch is not written by reference")
}
