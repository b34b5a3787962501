package codec

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeBroker is the smallest Kafka broker a real franz-go client will
// produce to: one node, one topic with one partition. It is built only on
// this package (FrameSize, ParseRequest, AppendResponse), so a real client
// checks our framing and header versions, and hands us real batches.
type fakeBroker struct {
	t     *testing.T
	ln    net.Listener
	topic string

	mu      sync.Mutex
	batches [][]byte // copies of every produced batch
	headers []RequestHeader
}

func newFakeBroker(t *testing.T, topic string) *fakeBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("cannot listen on loopback: %v", err)
	}
	fb := &fakeBroker{t: t, ln: ln, topic: topic}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { fb.serve(conn) })
		}
	})
	return fb
}

func (fb *fakeBroker) serve(conn net.Conn) {
	defer conn.Close()
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := conn.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for {
			total, ok, ferr := FrameSize(buf, DefaultMaxRequestBytes)
			if ferr != nil {
				fb.t.Errorf("fake broker: FrameSize: %v", ferr)
				return
			}
			if !ok || len(buf) < total {
				break
			}
			out, herr := fb.handle(buf[4:total])
			if herr != nil {
				fb.t.Errorf("fake broker: %v", herr)
				return
			}
			if _, werr := conn.Write(out); werr != nil {
				return
			}
			buf = buf[total:]
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				fb.t.Logf("fake broker: read: %v", err)
			}
			return
		}
	}
}

func (fb *fakeBroker) handle(frame []byte) ([]byte, error) {
	h, body, err := ParseRequest(frame)
	if err != nil {
		return nil, err
	}
	fb.mu.Lock()
	fb.headers = append(fb.headers, RequestHeader{APIKey: h.APIKey, APIVersion: h.APIVersion, Flexible: h.Flexible})
	fb.mu.Unlock()
	req := kmsg.RequestForKey(h.APIKey)
	if req == nil {
		return nil, errors.New("unknown api key " + strconv.Itoa(int(h.APIKey)))
	}
	req.SetVersion(h.APIVersion)
	if err := req.ReadFrom(body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(h.APIVersion)
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := resp.(*kmsg.ApiVersionsResponse)
		// Produce stays below v13, which names topics by id only.
		for _, k := range [][3]int16{{0, 3, 12}, {3, 0, 12}, {18, 0, 4}} {
			key := kmsg.NewApiVersionsResponseApiKey()
			key.ApiKey, key.MinVersion, key.MaxVersion = k[0], k[1], k[2]
			resp.ApiKeys = append(resp.ApiKeys, key)
		}
	case *kmsg.MetadataRequest:
		resp := resp.(*kmsg.MetadataResponse)
		host, port, _ := net.SplitHostPort(fb.ln.Addr().String())
		portNum, _ := strconv.Atoi(port)
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID, broker.Host, broker.Port = 0, host, int32(portNum)
		resp.Brokers = append(resp.Brokers, broker)
		resp.ControllerID = 0
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr(fb.topic)
		part := kmsg.NewMetadataResponseTopicPartition()
		part.Partition, part.Leader, part.Replicas, part.ISR = 0, 0, []int32{0}, []int32{0}
		topic.Partitions = append(topic.Partitions, part)
		resp.Topics = append(resp.Topics, topic)
	case *kmsg.ProduceRequest:
		resp := resp.(*kmsg.ProduceResponse)
		for _, topic := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = topic.Topic
			for _, part := range topic.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = part.Partition
				fb.mu.Lock()
				fb.batches = append(fb.batches, append([]byte(nil), part.Records...))
				fb.mu.Unlock()
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	default:
		return nil, errors.New("fake broker does not serve " + kmsg.NameForKey(h.APIKey))
	}
	return AppendResponse(nil, h.CorrelationID, resp), nil
}

func TestRealClientProducesBatchesThatValidate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real franz-go client")
	}
	const topic = "orders"
	fb := newFakeBroker(t, topic)
	tests := []struct {
		name        string
		compression kgo.CompressionCodec
		want        int8
	}{
		{"uncompressed", kgo.NoCompression(), 0},
		{"snappy", kgo.SnappyCompression(), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb.mu.Lock()
			fb.batches = nil
			fb.mu.Unlock()
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(fb.ln.Addr().String()),
				kgo.DefaultProduceTopic(topic),
				kgo.DisableIdempotentWrite(),
				kgo.ProducerBatchCompression(tt.compression),
				kgo.ProducerLinger(50*time.Millisecond),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			const nrecords = 5
			var wg sync.WaitGroup
			for i := range nrecords {
				wg.Add(1)
				cl.Produce(ctx, &kgo.Record{Value: []byte("value-" + strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
					defer wg.Done()
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			wg.Wait()

			fb.mu.Lock()
			defer fb.mu.Unlock()
			var total int32
			for _, raw := range fb.batches {
				b, err := ParseBatch(raw)
				if err != nil {
					t.Fatalf("ParseBatch of a franz-go batch: %v", err)
				}
				if b.Compression() != tt.want {
					t.Errorf("Compression() = %d, want %d", b.Compression(), tt.want)
				}
				total += b.NumRecords()
			}
			if total != nrecords {
				t.Errorf("franz-go batches hold %d records, want %d", total, nrecords)
			}
		})
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	sawFlexibleProduce := false
	for _, h := range fb.headers {
		req := kmsg.RequestForKey(h.APIKey)
		req.SetVersion(h.APIVersion)
		if flexible := req.IsFlexible(); h.Flexible != flexible {
			t.Errorf("key %d v%d parsed with Flexible=%v, want %v", h.APIKey, h.APIVersion, h.Flexible, flexible)
		}
		sawFlexibleProduce = sawFlexibleProduce || (h.APIKey == 0 && h.Flexible)
	}
	if !sawFlexibleProduce {
		t.Errorf("franz-go sent no flexible Produce request; saw %+v", fb.headers)
	}
}
