package objectio

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestParseLatency(t *testing.T) {
	l, err := ParseLatency("30ms-70ms", 1)
	if err != nil || l.Min != 30*time.Millisecond || l.Max != 70*time.Millisecond {
		t.Fatalf("30ms-70ms parsed as %+v, %v", l, err)
	}
	for i := 0; i < 1000; i++ {
		if d := l.draw(); d < l.Min || d > l.Max {
			t.Fatalf("drew %v outside [%v, %v]", d, l.Min, l.Max)
		}
	}
	if l, err := ParseLatency("5ms", 1); err != nil || l.Min != l.Max {
		t.Fatalf("5ms parsed as %+v, %v", l, err)
	}
	for _, bad := range []string{"x", "70ms-30ms", "-5ms", "5ms-y"} {
		if _, err := ParseLatency(bad, 1); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestWrapFaultyDelaysAndFails(t *testing.T) {
	s, err := WrapFaulty(NewMem(), FaultyConfig{Latency: "20ms", LostResponseRate: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Put(context.Background(), "k", []byte("v"), PutOptions{})
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("lost-response rate 1: Put returned %v, want ErrInjected", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Put took %v, want at least the 20ms latency", d)
	}
	if _, err := s.(Faulty).Inner.Get(context.Background(), "k", 0, -1); err != nil {
		t.Fatalf("a lost response must still have written the object: %v", err)
	}
	if inner := NewMem(); func() Store { s, _ := WrapFaulty(inner, FaultyConfig{}); return s }() != Store(inner) {
		t.Fatal("an empty config must not wrap the store")
	}
}
