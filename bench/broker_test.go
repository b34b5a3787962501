// Package bench holds the end-to-end benchmarks: real Kafka requests over
// TCP into an in-process broker on the mem store.
package bench

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

func startBroker(b *testing.B, window time.Duration) *server.Standalone {
	b.Helper()
	sa, err := server.StartStandalone(context.Background(), objectio.NewMem(), "127.0.0.1:0", server.Config{
		FlushWindow: window, AutoCreateTopics: true, DefaultPartitions: 8,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sa.Close(ctx)
	})
	return sa
}

// requestFrame encodes req as a whole request frame (header v1 or v2).
func requestFrame(req kmsg.Request, correlationID int32) []byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
	return f.AppendRequest(nil, req, correlationID)
}

// produceFrame is a Produce v9 request (acks=all) of one batch to
// partition 0 of topic, as a whole frame.
func produceFrame(topic string, batch []byte) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{rp}
	req.Topics = []kmsg.ProduceRequestTopic{rt}
	return requestFrame(req, 1)
}

// pipeline writes frames on one connection while reading the responses, and
// returns the response bodies' total size. It keeps up to depth requests in
// flight, as a client pipelines.
func pipeline(b *testing.B, addr string, frames [][]byte, n int) int64 {
	b.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const depth = 32
	slots := make(chan struct{}, depth)
	errc := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			slots <- struct{}{}
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
