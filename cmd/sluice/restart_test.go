package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
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

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordRetries(1<<30), kgo.RecordDeliveryTimeout(2*time.Minute),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	var (
		mu    sync.Mutex
		acked = map[string]ack{}
		fails int
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	produced := 0
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			wg.Add(1)
			produced++
			v := strconv.Itoa(i)
			cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails++
					return
				}
				acked[v] = ack{r.Partition, r.Offset}
			})
			if i%64 == 63 {
				time.Sleep(time.Millisecond) // keep memory bounded; still thousands of records a second
			}
		}
	}()
	for k := 0; k < kills; k++ {
		time.Sleep(700 * time.Millisecond)
		b.kill()
		b = startBinary(t, dataDir, addr)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if fails > 0 {
		t.Errorf("%d records failed to produce despite unbounded retries", fails)
	}
	if len(acked) < 1000 {
		t.Fatalf("only %d records were acknowledged across %d kills; the test proves little", len(acked), kills)
	}

	// Read everything back after one more crash.
	b.kill()
	b = startBinary(t, dataDir, addr)
	offsets := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]ack{}
	for len(seen) < len(acked) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := seen[v]; dup {
				t.Errorf("record %s stored twice: %v and %d/%d", v, prev, r.Partition, r.Offset)
			}
			seen[v] = ack{r.Partition, r.Offset}
		})
	}
	lost := 0
	for v, a := range acked {
		if got, ok := seen[v]; !ok || got != a {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged record %s at %d/%d: read back at %v (present %v)", v, a.partition, a.offset, got, ok)
			}
		}
	}
	t.Logf("%d produced, %d acknowledged, %d read back, %d kills, %d lost", produced, len(acked), len(seen), kills+1, lost)
}
