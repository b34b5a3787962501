package server

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/s3server"
)

// openMinIO opens a fresh prefix of a MinIO server as a store.
func openMinIO(t *testing.T, srv *s3server.Server) objectio.Store {
	t.Helper()
	st, err := objectio.Open(srv.URL(s3server.RandomPrefix()))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClientsOnMinIO runs the four clients' 100k-record scenario with the
// broker's store on a real MinIO server.
func TestClientsOnMinIO(t *testing.T) {
	srv := s3server.StartMinIOServer(t)
	for _, c := range []clientTest{
		{name: "franz-go", produce: franzProduce, consume: franzConsume},
		{name: "sarama", produce: saramaProduce, consume: saramaConsume},
		{name: "kafka-go", produce: kafkaGoProduce, consume: kafkaGoConsume},
		{name: "confluent", produce: confluentProduce, consume: confluentConsume},
	} {
		t.Run(c.name, func(t *testing.T) { runClientTestOn(t, c, openMinIO(t, srv)) })
	}
}

// ignoresIfAbsent is a store that silently drops the if-absent condition,
// as some S3-compatible servers do with If-None-Match.
type ignoresIfAbsent struct{ objectio.Store }

func (s ignoresIfAbsent) Put(ctx context.Context, key string, data []byte, _ objectio.PutOptions) error {
	return s.Store.Put(ctx, key, data, objectio.PutOptions{})
}

func TestStartupRefusesAStoreThatIgnoresIfAbsent(t *testing.T) {
	srv := s3server.StartMinIOServer(t)
	_, err := StartStandalone(context.Background(), ignoresIfAbsent{openMinIO(t, srv)}, "127.0.0.1:0", Config{})
	if !errors.Is(err, objectio.ErrConditionalCreateIgnored) {
		t.Fatalf("startup on a store ignoring if-absent: %v, want ErrConditionalCreateIgnored", err)
	}
	t.Logf("startup refused: %v", err)
}

// TestMinIOKilledMidRunLosesNothing kills the MinIO server under a running
// broker while an idempotent producer writes, restarts it, and checks that
// producing resumes and every acknowledged record is read back.
func TestMinIOKilledMidRunLosesNothing(t *testing.T) {
	srv := s3server.StartMinIOServer(t)
	checkOutageRecovery(t, openMinIO(t, srv), srv.Stop, func() { srv.Start() }) // Start fails the test itself
}
