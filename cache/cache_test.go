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
			b, err := c.Load(Key("data/x", 10), func() ([]byte, error) {
				loads.Add(1)
				<-release
				return []byte("batch"), nil
			})
			if err != nil || string(b) != "batch" {
				t.Errorf("Load = %q, %v; want \"batch\", nil", b, err)
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
	b, err := c.Load("k", func() ([]byte, error) { return []byte("ok"), nil })
	if err != nil || string(b) != "ok" {
		t.Fatalf("after a failed load, Load = %q, %v; want ok", b, err)
	}
}

func TestPutIsVisibleAfterSettle(t *testing.T) {
	c, _ := New(8 << 20)
	defer c.Close()
	want := bytes.Repeat([]byte{7}, 1000)
	c.Put(Key("data/y", 0), want)
	c.Settle()
	got, ok := c.Get(Key("data/y", 0))
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("Get after Put+Settle = %v, %v; want the put bytes", len(got), ok)
	}
}
