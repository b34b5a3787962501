package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// sluiceBinary is built once by TestMain.
var sluiceBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-bin")
	if err != nil {
		panic(err)
	}
	sluiceBinary = filepath.Join(dir, "sluice")
	out, err := exec.Command("go", "build", "-o", sluiceBinary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// broker is one run of the real binary.
type broker struct {
	cmd  *exec.Cmd
	addr string
}

func startBinary(t *testing.T, dataDir, addr string) *broker {
	t.Helper()
	cmd := exec.Command(sluiceBinary, "serve",
		"--listen", addr, "--store", "dir://"+dataDir, "--admin-addr", "",
		"--flush-window", "20ms", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return &broker{cmd: cmd, addr: addr}
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("broker did not listen on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *broker) kill() {
	b.cmd.Process.Signal(syscall.SIGKILL)
	b.cmd.Wait()
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type ack struct {
	partition int32
	offset    int64
}

// TestSIGKILLDuringIdempotentProduceLosesNothing kills the real binary
// several times while an idempotent producer writes continuously, restarts
// it on the same directory each time, and then reads everything back: every
// acknowledged record is at its acknowledged offset, and no record is there
// twice.
func TestSIGKILLDuringIdempotentProduceLosesNothing(t *testing.T) {
	const (
		topic      = "crash"
		partitions = 4
		kills      = 3
	)
	dataDir, addr := t.TempDir(), freeAddr(t)
	b := startBinary(t, dataDir, addr)
	defer func() { b.kill() }()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pl := newProducer(t, addr, topic)
	if _, err := kadm.NewClient(pl.client).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	stop := pl.produceUntil(ctx, time.Millisecond) // still thousands of records a second
	for k := 0; k < kills; k++ {
		time.Sleep(700 * time.Millisecond)
		b.kill()
		b = startBinary(t, dataDir, addr)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	if pl.fails > 0 {
		t.Errorf("%d records failed to produce despite unbounded retries", pl.fails)
	}
	if len(pl.acked) < 1000 {
		t.Fatalf("only %d records were acknowledged across %d kills; the test proves little", len(pl.acked), kills)
	}

	// Read everything back after one more crash.
	b.kill()
	b = startBinary(t, dataDir, addr)
	verifyReadBack(t, ctx, addr, topic, partitions, pl.acked)
	t.Logf("%d produced, %d acknowledged, %d kills", pl.sent, len(pl.acked), kills+1)
}
