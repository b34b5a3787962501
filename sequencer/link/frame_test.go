package link

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/group"
)

func roundTrip(t *testing.T, f Frame) Frame {
	t.Helper()
	b, err := AppendFrame(nil, f)
	if err != nil {
		t.Fatalf("encode %+v: %v", f, err)
	}
	got, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("decode %+v: %v", f, err)
	}
	return got
}

func TestFramesRoundTrip(t *testing.T) {
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(5)
	join.Group, join.MemberID, join.ProtocolType = "g", "m-1", "consumer"
	join.Protocols = append(join.Protocols, kmsg.JoinGroupRequestProtocol{Name: "range", Metadata: []byte{1, 2, 3}})
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(8)
	commit.Group = "g"
	syncResp := kmsg.NewPtrSyncGroupResponse()
	syncResp.SetVersion(4)
	syncResp.MemberAssignment = []byte("assignment")
	bodies := []any{
		&sequencer.CommitRequest{Object: "data/a/1", Batches: []sequencer.BatchCommit{{Topic: "t", Partition: 3, Pos: 10, Len: 20, Records: 4, ProducerID: 7, BaseSequence: 9}}},
		&sequencer.CommitReply{Results: []sequencer.BatchResult{{BaseOffset: 42, Dup: true}}},
		&sequencer.CreateTopicRequest{Name: "t", Partitions: 8, Configs: map[string]string{"retention.ms": "1"}},
		&sequencer.DeleteTopicRequest{Name: "t"},
		&sequencer.CreatePartitionsRequest{Name: "t", Count: 9, ValidateOnly: true},
		&sequencer.TopicReply{Err: 36, Message: "exists", ID: [16]byte{1, 2}},
		&sequencer.InitProducerRequest{ProducerID: -1},
		&sequencer.InitProducerReply{ProducerID: 5, Epoch: 1},
		&sequencer.JoinGroup{Client: group.Client{ID: "client", Host: "/10.0.0.1"}, Req: join},
		commit,
		syncResp,
	}
	for _, body := range bodies {
		got := roundTrip(t, Frame{Kind: KindRequest, ID: 77, Body: body})
		if got.ID != 77 || !reflect.DeepEqual(got.Body, body) {
			t.Errorf("%T: got %#v, want %#v", body, got.Body, body)
		}
	}
	if got := roundTrip(t, Frame{Kind: KindUpdate, Index: 12, Data: []byte(`{"w":"x"}`)}); got.Index != 12 || string(got.Data) != `{"w":"x"}` {
		t.Errorf("update: %+v", got)
	}
	if got := roundTrip(t, Frame{Kind: KindHeartbeat, Index: 99}); got.Index != 99 {
		t.Errorf("heartbeat: %+v", got)
	}
	if got := roundTrip(t, Frame{Kind: KindSubscribe}); got.Kind != KindSubscribe {
		t.Errorf("subscribe: %+v", got)
	}
}

func TestEncodingAnUnknownBodyFails(t *testing.T) {
	if _, err := AppendFrame(nil, Frame{Kind: KindRequest, Body: struct{}{}}); err == nil {
		t.Fatal("encoded a body the protocol does not know")
	}
}

// TestBadFramesAreErrorsNotPanics: every truncation and corruption of
// valid frames decodes to a frame or an error.
func TestBadFramesAreErrorsNotPanics(t *testing.T) {
	valid, _ := AppendFrame(nil, Frame{Kind: KindRequest, ID: 1, Body: &sequencer.CommitRequest{Object: "o"}})
	join := kmsg.NewPtrJoinGroupRequest()
	valid, _ = AppendFrame(valid, Frame{Kind: KindRequest, ID: 2, Body: &sequencer.JoinGroup{Req: join}})
	for cut := 0; cut < len(valid); cut++ {
		for _, b := range [][]byte{valid[:cut], corrupt(valid, cut)} {
			r := bufio.NewReader(bytes.NewReader(b))
			for {
				if _, err := ReadFrame(r); err != nil {
					break
				}
			}
		}
	}
}

func corrupt(b []byte, at int) []byte {
	c := bytes.Clone(b)
	c[at] ^= 0xff
	return c
}

func FuzzReadFrame(f *testing.F) {
	valid, _ := AppendFrame(nil, Frame{Kind: KindRequest, ID: 1, Body: &sequencer.InitProducerRequest{ProducerID: -1}})
	f.Add(valid)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			if _, err := ReadFrame(r); err != nil {
				return
			}
		}
	})
}
