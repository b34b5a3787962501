package objectio_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/objectio/storetest"
)

func TestFaultyWithoutFaultsConforms(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectio.Store {
		return objectio.Faulty{Inner: objectio.NewMem()}
	})
}

// always injects fault on op and nothing on other ops.
func always(op objectio.Op, fault objectio.Fault) objectio.Injector {
	return objectio.InjectorFunc(func(got objectio.Op, _ string) objectio.Fault {
		if got == op {
			return fault
		}
		return objectio.FaultNone
	})
}

func TestFaultAfterPutStoresTheObjectButReportsInjected(t *testing.T) {
	ctx := context.Background()
	inner := objectio.NewMem()
	s := objectio.Faulty{Inner: inner, Injector: always(objectio.OpPut, objectio.FaultAfter)}
	err := s.Put(ctx, "meta/log/00000000000000000007", []byte("entry"), objectio.PutOptions{IfAbsent: true})
	if !errors.Is(err, objectio.ErrInjected) {
		t.Fatalf("Put with FaultAfter = %v, want ErrInjected", err)
	}
	got, err := inner.Get(ctx, "meta/log/00000000000000000007", 0, -1)
	if err != nil || string(got) != "entry" {
		t.Fatalf("inner Get after a failed-after Put = %q, %v; want \"entry\", nil", got, err)
	}
	// The retry a sequencer might do sees its own object: the ambiguous case.
	err = s.Put(ctx, "meta/log/00000000000000000007", []byte("entry"), objectio.PutOptions{IfAbsent: true})
	if !errors.Is(err, objectio.ErrInjected) {
		t.Fatalf("second Put with FaultAfter = %v, want ErrInjected (the inner ErrExists is lost with the response)", err)
	}
}

func TestFaultBeforePutStoresNothing(t *testing.T) {
	ctx := context.Background()
	inner := objectio.NewMem()
	s := objectio.Faulty{Inner: inner, Injector: always(objectio.OpPut, objectio.FaultBefore)}
	if err := s.Put(ctx, "k", []byte("x"), objectio.PutOptions{}); !errors.Is(err, objectio.ErrInjected) {
		t.Fatalf("Put with FaultBefore = %v, want ErrInjected", err)
	}
	if _, err := inner.Get(ctx, "k", 0, -1); !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("inner Get after a failed-before Put = %v, want ErrNotFound", err)
	}
}

func TestFaultsOnOtherOps(t *testing.T) {
	ctx := context.Background()
	inner := objectio.NewMem()
	if err := inner.Put(ctx, "k", []byte("x"), objectio.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	before := func(op objectio.Op) objectio.Store {
		return objectio.Faulty{Inner: inner, Injector: always(op, objectio.FaultBefore)}
	}
	after := func(op objectio.Op) objectio.Store {
		return objectio.Faulty{Inner: inner, Injector: always(op, objectio.FaultAfter)}
	}
	if _, err := before(objectio.OpGet).Get(ctx, "k", 0, -1); !errors.Is(err, objectio.ErrInjected) {
		t.Errorf("Get with FaultBefore = %v, want ErrInjected", err)
	}
	if _, err := after(objectio.OpList).List(ctx, "", "", 0); !errors.Is(err, objectio.ErrInjected) {
		t.Errorf("List with FaultAfter = %v, want ErrInjected", err)
	}
	if err := before(objectio.OpDelete).Delete(ctx, "k"); !errors.Is(err, objectio.ErrInjected) {
		t.Errorf("Delete with FaultBefore = %v, want ErrInjected", err)
	}
	if _, err := inner.Get(ctx, "k", 0, -1); err != nil {
		t.Fatalf("Get after a failed-before Delete = %v, want the object still there", err)
	}
	if err := after(objectio.OpDelete).Delete(ctx, "k"); !errors.Is(err, objectio.ErrInjected) {
		t.Errorf("Delete with FaultAfter = %v, want ErrInjected", err)
	}
	if _, err := inner.Get(ctx, "k", 0, -1); !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("Get after a failed-after Delete = %v, want ErrNotFound", err)
	}
}

func TestRandomInjectorReplaysFromItsSeed(t *testing.T) {
	rates := map[objectio.Op]objectio.FaultRate{
		objectio.OpPut: {BeforeProb: 0.2, AfterProb: 0.2},
		objectio.OpGet: {BeforeProb: 0.1},
	}
	draw := func(seed uint64) []objectio.Fault {
		inj := objectio.NewRandomInjector(rand.New(rand.NewPCG(seed, 0)), rates)
		out := make([]objectio.Fault, 0, 3000)
		for range 1000 {
			out = append(out, inj.MaybeFail(objectio.OpPut, "k"), inj.MaybeFail(objectio.OpGet, "k"), inj.MaybeFail(objectio.OpList, ""))
		}
		return out
	}
	a, b := draw(42), draw(42)
	counts := map[objectio.Fault]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call %d: seed 42 gave %v then %v; a seed must replay exactly", i, a[i], b[i])
		}
		if i%3 == 2 && a[i] != objectio.FaultNone {
			t.Fatalf("call %d: List got %v, but List has no fault rate", i, a[i])
		}
		if i%3 == 1 && a[i] == objectio.FaultAfter {
			t.Fatalf("call %d: Get got %v, but Get has no after-rate", i, a[i])
		}
		counts[a[i]]++
	}
	// 1000 puts at 20%/20% and 1000 gets at 10% before: loose bounds.
	if counts[objectio.FaultBefore] < 200 || counts[objectio.FaultBefore] > 400 {
		t.Errorf("FaultBefore count = %d, want about 300", counts[objectio.FaultBefore])
	}
	if counts[objectio.FaultAfter] < 120 || counts[objectio.FaultAfter] > 280 {
		t.Errorf("FaultAfter count = %d, want about 200", counts[objectio.FaultAfter])
	}
}

func TestRandomInjectorIsSafeForConcurrentUse(t *testing.T) {
	inj := objectio.NewRandomInjector(rand.New(rand.NewPCG(1, 2)),
		map[objectio.Op]objectio.FaultRate{objectio.OpPut: {BeforeProb: 0.3, AfterProb: 0.3}})
	s := objectio.Faulty{Inner: objectio.NewMem(), Injector: inj}
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				_ = s.Put(context.Background(), "k", []byte{byte(g), byte(i)}, objectio.PutOptions{})
			}
		}()
	}
	for range 8 {
		<-done
	}
}
