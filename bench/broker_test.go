// Package bench holds the end-to-end benchmarks: real Kafka requests over
// TCP into an in-process broker on the mem store.
package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

func startBroker(b *testing.B, window time.Duration) *server.Standalone {
	b.Helper()
	return startBrokerOn(b, objectio.NewMem(), server.Config{FlushWindow: window, AutoCreateTopics: true, DefaultPartitions: 8})
}

// startBrokerOn starts `sluice serve` in process on store, quiet, and
// closes it when the benchmark ends.
func startBrokerOn(b testing.TB, store objectio.Store, cfg server.Config) *server.Standalone {
	b.Helper()
	sa := startBrokerUnmanaged(b, store, cfg)
	b.Cleanup(func() { closeBroker(sa) })
	return sa
}

// startBrokerUnmanaged is startBrokerOn for a broker the caller closes.
func startBrokerUnmanaged(b testing.TB, store objectio.Store, cfg server.Config) *server.Standalone {
	b.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	sa, err := server.StartStandalone(context.Background(), store, "127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	return sa
}

// closeBroker closes sa, waiting at most 10 s for what it buffers.
func closeBroker(sa *server.Standalone) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sa.Close(ctx)
}

// requestFrame encodes req as a whole request frame (header v1 or v2).
func requestFrame(req kmsg.Request, correlationID int32) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	return f.AppendRequest(nil, req, correlationID)
}

// produceFrame is a Produce v9 request (acks=all) of one batch to
// partition 0 of topic, as a whole frame.
func produceFrame(topic string, batch []byte) []byte {
	return produceFrameParts(topic, batch, 1)
}

// produceFrameParts is a Produce v9 request (acks=all) of the same batch to
// each of partitions 0..partitions-1 of topic, as a whole frame: what a
// client with one batch per partition sends in one request.
func produceFrameParts(topic string, batch []byte, partitions int32) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return requestFrame(req, 1)
}

// pipeline writes n frames (cycling through frames) on one connection
// while reading the responses, and returns the response bodies' total
// size. It keeps up to pipelineDepth requests in flight, as a client
// pipelines.
func pipeline(b *testing.B, addr string, frames [][]byte, n int) int64 {
	return pipelineTimed(b, addr, frames, n, nil)
}

// pipelineDepth is how many requests pipeline keeps in flight.
const pipelineDepth = 32

// pipelineTimed is pipeline that also records each request's latency, from
// writing it to reading its response, in hist (when not nil). Kafka
// answers a connection's requests in order, so the i-th response is the
// i-th request's.
func pipelineTimed(b *testing.B, addr string, frames [][]byte, n int, hist *Histogram) int64 {
	b.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	// slots bounds the requests in flight; sent holds their send times,
	// taken once a slot is free, so waiting for one is not latency.
	slots := make(chan struct{}, pipelineDepth)
	sent := make(chan time.Time, pipelineDepth)
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			slots <- struct{}{}
			sent <- time.Now()
			if _, err := conn.Write(frames[i%len(frames)]); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	var total int64
	var size [4]byte
	buf := make([]byte, 1<<20)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			b.Fatalf("response %d: %v", i, err)
		}
		m := int(binary.BigEndian.Uint32(size[:]))
		if m > len(buf) {
			buf = make([]byte, m)
		}
		if _, err := io.ReadFull(conn, buf[:m]); err != nil {
			b.Fatal(err)
		}
		total += int64(m)
		t := <-sent
		if hist != nil {
			hist.Record(time.Since(t))
		}
		<-slots
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return total
}

// checkProduceResponse fails the benchmark if a produce response carries an error.
func checkProduceResponse(b *testing.B, addr string, frame []byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	conn.Write(frame)
	var size [4]byte
	io.ReadFull(conn, size[:])
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	io.ReadFull(conn, body)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(body[5:]); err != nil { // correlation id + header tags
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("produce error %d on %s/%d", p.ErrorCode, t.Topic, p.Partition)
			}
		}
	}
}

// endOffsets lists topic's high watermarks, to check what a benchmark
// claims it wrote.
func endOffsets(b *testing.B, addr, topic string) map[int32]int64 {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	listed, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		b.Fatal(err)
	}
	offs := map[int32]int64{}
	listed.Each(func(o kadm.ListedOffset) { offs[o.Partition] = o.Offset })
	return offs
}

// sizeName names a byte size the way benchmark names carry it: 100B, 1KiB.
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
