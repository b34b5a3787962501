package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec/codectest"
)

// syncBuffer collects log output from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func rawClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t *testing.T, cl *kgo.Client, name string, partitions int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
}

func produceRequest(topic string, batches map[int32][]byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := int32(0); p < int32(len(batches)); p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batches[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func TestBadCRCFailsOnlyItsPartition(t *testing.T) {
	sa := startBroker(t, nil, Config{})
	cl := rawClient(t, sa.Addr())
	createTopic(t, cl, "crc", 3)
	bad := codectest.Batch(codectest.BatchSpec{Records: 5, ValueBytes: 10})
	bad[len(bad)-1] ^= 0xff // a record byte: covered by the CRC
	req := produceRequest("crc", map[int32][]byte{
		0: codectest.Batch(codectest.BatchSpec{Records: 5, ValueBytes: 10}),
		1: bad,
		2: codectest.Batch(codectest.BatchSpec{Records: 2, ValueBytes: 10}),
	})
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []int16{0, kerr.CorruptMessage.Code, 0}
	for i, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != want[i] {
			t.Errorf("partition %d: error %v, want %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(want[i]))
		}
		if p.ErrorCode == 0 && p.BaseOffset != 0 {
			t.Errorf("partition %d: base offset %d, want 0", p.Partition, p.BaseOffset)
		}
	}
}

func TestUnknownTopicWithAutoCreateOff(t *testing.T) {
	sa := startBroker(t, nil, Config{AutoCreateTopics: false})
	cl := rawClient(t, sa.Addr())
	req := produceRequest("nope", map[int32][]byte{0: codectest.Batch(codectest.BatchSpec{Records: 1})})
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
	meta := kmsg.NewPtrMetadataRequest()
	name := "nope"
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = &name
	meta.Topics = append(meta.Topics, mt)
	meta.AllowAutoTopicCreation = true
	mresp, err := meta.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := mresp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("metadata for unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(code))
	}
}

// rawRequest writes one request frame and returns the response body (after
// the correlation id), or an error if the connection closed.
func rawRequest(t *testing.T, conn net.Conn, key, version int16, body []byte) ([]byte, error) {
	t.Helper()
	var frame []byte
	frame = binary.BigEndian.AppendUint32(frame, 0)
	frame = binary.BigEndian.AppendUint16(frame, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, 7) // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff)
	frame = append(frame, body...)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(frame); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, resp); err != nil {
		return nil, err
	}
	if got := binary.BigEndian.Uint32(resp); got != 7 {
		t.Fatalf("correlation id %d, want 7", got)
	}
	return resp[4:], nil
}

func TestUnsupportedVersion(t *testing.T) {
	sa := startBroker(t, nil, Config{})
	conn, err := net.Dial("tcp", sa.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// ApiVersions at a version the broker does not know: a v0 response
	// with UNSUPPORTED_VERSION and the supported versions.
	body, err := rawRequest(t, conn, 18, 99, []byte{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(0)
	if err := av.ReadFrom(body); err != nil {
		t.Fatalf("ApiVersions v0 fallback does not decode: %v", err)
	}
	if av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v99: error %v with %d keys, want UNSUPPORTED_VERSION and the key list",
			kerr.ErrorForCode(av.ErrorCode), len(av.ApiKeys))
	}

	// Metadata v13 is known to kmsg but not served.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(13)
	body, err = rawRequest(t, conn, 3, 13, req.AppendTo([]byte{0})) // header v2: empty tagged fields
	if err != nil {
		t.Fatal(err)
	}
	mr := kmsg.NewPtrMetadataResponse()
	mr.SetVersion(13)
	if err := mr.ReadFrom(body[1:]); err != nil { // skip the response header's tagged fields
		t.Fatalf("metadata v13 response does not decode: %v", err)
	}
	if mr.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("Metadata v13: error %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(mr.ErrorCode))
	}
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	logs := &syncBuffer{}
	sa := startBroker(t, nil, Config{
		MaxRequestBytes: 1 << 20,
		Logger:          slog.New(slog.NewTextHandler(logs, nil)),
	})
	good := rawClient(t, sa.Addr())
	createTopic(t, good, "ok", 1)

	cases := []struct {
		name, wantLog string
		bytes         []byte
	}{
		{"oversized frame", "bad frame", []byte{0x10, 0, 0, 0}},
		{"negative size", "bad frame", []byte{0xff, 0xff, 0xff, 0xff}},
		{"garbage header", "bad request", []byte{0, 0, 0, 3, 1, 2, 3}},
		{"unknown api key", "bad request", []byte{0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff}},
		{"malformed body", "bad request", []byte{0, 0, 0, 12, 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", sa.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(tc.bytes)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if n, err := conn.Read(make([]byte, 16)); err != io.EOF {
				t.Fatalf("after %s: read %d bytes, err %v; want the connection closed (EOF)", tc.name, n, err)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("no %q log line for %s; logs:\n%s", tc.wantLog, tc.name, logs.String())
			}
			// The broker still serves other connections.
			r := good.ProduceSync(context.Background(), &kgo.Record{Topic: "ok", Value: []byte("still here")})
			if err := r.FirstErr(); err != nil {
				t.Fatalf("produce after %s: %v", tc.name, err)
			}
		})
	}
}
