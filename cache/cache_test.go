package cache

import (
	"bytes"
	"errors"
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

func TestPutIsVisibleAfterSettle(t *testing.T) {
	c, _ := New(8 << 20)
	defer c.Close()
	want := bytes.Repeat([]byte{7}, 1000)
	c.Put(Key("data/y", 0), want, nil)
	c.Settle()
	got, ok := c.Acquire(Key("data/y", 0))
	if !ok || !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("Acquire after Put+Settle = %v, %v; want the put bytes", got, ok)
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
	c.Settle()
	reader, ok := c.Acquire("written:a")
	if !ok {
		t.Fatal("the value is not cached")
	}
	// Evict it: the cache holds 1 MiB, and this needs most of it.
	for i := range 20 {
		c.Put(Key("other", int64(i)), make([]byte, 600<<10), nil)
		c.Settle()
		if _, ok := c.rc.Get("written:a"); !ok {
			break
		}
	}
	if _, ok := c.rc.Get("written:a"); ok {
		t.Fatal("setup: the value was never evicted")
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
