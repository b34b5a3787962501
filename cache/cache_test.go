package cache

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

func TestLoadRunsOnceForConcurrentMisses(t *testing.T) {
	c, err := New(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var loads atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Load(Key("data/x", 10), func() ([]byte, error) {
				loads.Add(1)
				<-release
				return []byte("batch"), nil
			})
			if err != nil || string(v.Bytes()) != "batch" {
				t.Errorf("Load = %v, %v; want \"batch\", nil", v, err)
			}
		}()
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("loader ran %d times for 16 concurrent misses; want 1", n)
	}
}

func TestLoadedValueIsVisibleToTheNextLoad(t *testing.T) {
	c, _ := New(8 << 20)
	defer c.Close()
	loads := 0
	for i := 0; i < 3; i++ {
		if _, err := c.Load("k", func() ([]byte, error) { loads++; return []byte("v"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if loads != 1 {
		t.Fatalf("three sequential loads of one key ran the loader %d times; want 1", loads)
	}
}

func TestLoadErrorIsNotCached(t *testing.T) {
	c, _ := New(8 << 20)
	defer c.Close()
	boom := errors.New("boom")
	if _, err := c.Load("k", func() ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	v, err := c.Load("k", func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(v.Bytes()) != "ok" {
		t.Fatalf("after a failed load, Load = %v, %v; want ok", v, err)
	}
}

func TestPutIsVisibleAtOnce(t *testing.T) {
	c, _ := New(8 << 20)
	defer c.Close()
	want := bytes.Repeat([]byte{7}, 1000)
	c.Put(Key("data/y", 0), want, nil)
	got, ok := c.Acquire(Key("data/y", 0))
	if !ok || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("Acquire after Put = %v, %v; want the put bytes", got, ok)
	}
}

// TestLeastRecentlyUsedGoesFirst: a full cache drops the value used longest
// ago, and a value just read or loaded is never the one turned away, so a
// consumer reading a log from the start (a scan) finds what it loaded.
func TestLeastRecentlyUsedGoesFirst(t *testing.T) {
	c, _ := New(4 << 20)
	defer c.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		c.Put(k, make([]byte, 1<<20), nil)
	}
	if v, ok := c.Acquire("a"); ok { // a is now the most recent
		v.Release()
	}
	c.Put("e", make([]byte, 1<<20), nil)
	for k, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true, "e": true} {
		if _, got := c.Acquire(k); got != want {
			t.Errorf("after a, b, c, d, a read, e: %s cached = %v, want %v", k, got, want)
		}
	}
	loads := 0
	for i := range 40 {
		for range 4 { // four consumers read each object in turn
			v, err := c.Load(ObjectKey(strconv.Itoa(i)), func() ([]byte, error) { loads++; return make([]byte, 1<<20), nil })
			if err != nil {
				t.Fatal(err)
			}
			v.Release()
		}
	}
	if loads != 40 {
		t.Errorf("a scan of 40 objects, each read 4 times in a row, loaded %d times; want 40", loads)
	}
}

// TestBufferComesBackOnlyWhenNobodyHoldsIt: a value with a free function
// is handed back once, after the cache dropped it and the last reader
// released it, and cannot be acquired after that.
func TestBufferComesBackOnlyWhenNobodyHoldsIt(t *testing.T) {
	c, _ := New(1 << 20) // the minimum: room for one of the values below
	defer c.Close()
	var freed atomic.Int32
	buf := make([]byte, 600<<10)
	c.Put("written:a", buf, func(b []byte) {
		if &b[0] != &buf[0] {
			t.Error("free got other bytes")
		}
		freed.Add(1)
	})
	reader, ok := c.Acquire("written:a")
	if !ok {
		t.Fatal("the value is not cached")
	}
	// Evict it: the cache holds 1 MiB, and this needs most of it.
	c.Put(Key("other", 0), make([]byte, 600<<10), nil)
	if _, ok := c.Acquire("written:a"); ok {
		t.Fatal("setup: the value was not evicted")
	}
	if n := freed.Load(); n != 0 {
		t.Fatalf("freed %d times while a reader holds the value", n)
	}
	reader.Release()
	if n := freed.Load(); n != 1 {
		t.Fatalf("freed %d times after the last reader released it; want 1", n)
	}
	if reader.acquire() {
		t.Fatal("a freed value could be acquired again")
	}
}
