package server

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/objectio"
)

// TestStoreOutageAcksNothingAndRecovers takes the object store away while
// an idempotent producer writes: nothing is acknowledged while it is down,
// producing resumes by itself when it is back, and every acknowledged record
// is read back at its offset.
func TestStoreOutageAcksNothingAndRecovers(t *testing.T) {
	var down atomic.Bool
	store := objectio.Faulty{Inner: objectio.NewMem(), Injector: objectio.InjectorFunc(func(objectio.Op, string) objectio.Fault {
		if down.Load() {
			return objectio.FaultBefore
		}
		return objectio.FaultNone
	})}
	checkOutageRecovery(t, store, func() { down.Store(true) }, func() { down.Store(false) })
}

// checkOutageRecovery runs a broker on store and an idempotent producer
// through an outage made by stop and ended by start.
func checkOutageRecovery(t *testing.T, store objectio.Store, stop, start func()) {
	var down atomic.Bool
	sa := startBroker(t, store, Config{})
	cl, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.DefaultProduceTopic("outage"),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	createTopic(t, cl, "outage", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu             sync.Mutex
		acked          = map[string]kgo.Record{}
		ackedWhileDown int
		wg             sync.WaitGroup
	)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("record %s failed for good: %v", r.Value, err)
					return
				}
				if down.Load() {
					ackedWhileDown++
				}
				acked[string(r.Value)] = *r
			})
			time.Sleep(time.Millisecond)
		}
	}
	produce(0, 300)
	wg.Wait()
	down.Store(true)
	stop()
	produce(300, 600) // retried by the client until the store is back

	// A produce request of its own gets a retriable error, in bounded time.
	began := time.Now()
	resp, err := produceRequest("outage", map[int32][]byte{0: codectest.Batch(codectest.BatchSpec{Records: 1})}).RequestWith(ctx, rawClient(t, sa.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	code := resp.Topics[0].Partitions[0].ErrorCode
	if e := kerr.ErrorForCode(code); !kerr.IsRetriable(e) {
		t.Errorf("produce during the outage: %v, want a retriable error", e)
	}
	t.Logf("produce during the outage answered %v after %v", kerr.ErrorForCode(code), time.Since(began).Round(time.Millisecond))
	time.Sleep(time.Second)
	mu.Lock()
	during := len(acked)
	mu.Unlock()
	start()
	down.Store(false)
	wg.Wait()
	produce(600, 900)
	wg.Wait()

	if ackedWhileDown > 0 {
		t.Errorf("%d records were acknowledged while the store was down", ackedWhileDown)
	}
	if during != 300 {
		t.Errorf("%d records acknowledged by the end of the outage, want the 300 from before it", during)
	}
	if len(acked) != 900 {
		t.Fatalf("%d of 900 records acknowledged after the store came back", len(acked))
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(sa.Addr()), kgo.ConsumeTopics("outage"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := 0
	for seen < len(acked) && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			want, ok := acked[string(r.Value)]
			if !ok || want.Partition != r.Partition || want.Offset != r.Offset {
				t.Errorf("record %s read at %d/%d, acknowledged at %d/%d", r.Value, r.Partition, r.Offset, want.Partition, want.Offset)
			}
			seen++
		})
	}
	if seen != len(acked) {
		t.Fatalf("read back %d of %d acknowledged records", seen, len(acked))
	}
}
