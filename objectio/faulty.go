package objectio

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
)

// ErrInjected is the error a Faulty store returns for an injected fault.
var ErrInjected = errors.New("objectio: injected fault")

// Op names a Store operation, for fault injection.
type Op int

// The operations of Store, one per method.
const (
	OpPut Op = iota
	OpGet
	OpList
	OpDelete
	opCount // number of Ops; keep last
)

func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpGet:
		return "get"
	case OpList:
		return "list"
	case OpDelete:
		return "delete"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Fault is what an Injector decides for one call.
type Fault int

const (
	// FaultNone lets the call through untouched.
	FaultNone Fault = iota
	// FaultBefore fails the call without doing it: the store is unchanged.
	FaultBefore
	// FaultAfter does the call, then reports ErrInjected instead of its
	// result: the "failed after" case of a lost response, where the caller
	// cannot tell whether the operation happened. The metadata log's
	// ambiguous-append handling exists for exactly this.
	FaultAfter
)

func (f Fault) String() string {
	switch f {
	case FaultNone:
		return "none"
	case FaultBefore:
		return "failed-before"
	case FaultAfter:
		return "failed-after"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Injector decides the fault for each call. key is the object key, or the
// prefix for OpList. Implementations must be safe for concurrent use.
type Injector interface {
	MaybeFail(op Op, key string) Fault
}

// InjectorFunc adapts a function to Injector, for scripted faults in tests.
type InjectorFunc func(op Op, key string) Fault

// MaybeFail implements Injector.
func (f InjectorFunc) MaybeFail(op Op, key string) Fault { return f(op, key) }

// Faulty wraps a Store and injects the faults its Injector chooses. A nil
// Injector injects nothing.
type Faulty struct {
	Inner    Store
	Injector Injector
	// Latency, if set, delays every call by a drawn duration before it is
	// made, as a remote store's round trip would.
	Latency *Latency
	// PutLatency, if set, delays PUTs further, before they happen: a test
	// holds one process's writes back while others go ahead.
	PutLatency *Latency
}

var _ Store = Faulty{}

func (f Faulty) fault(op Op, key string) Fault {
	f.Latency.wait()
	if f.Injector == nil {
		return FaultNone
	}
	return f.Injector.MaybeFail(op, key)
}

func injected(fault Fault, op Op, key string) error {
	return fmt.Errorf("%w: %s %s %q", ErrInjected, fault, op, key)
}

// ReleasesData is the inner store's answer (see objectio.ReleasesData).
func (f Faulty) ReleasesData() bool { return ReleasesData(f.Inner) }

// Put implements Store.
func (f Faulty) Put(ctx context.Context, key string, data []byte, opt PutOptions) error {
	f.PutLatency.wait()
	fault := f.fault(OpPut, key)
	if fault == FaultBefore {
		return injected(fault, OpPut, key)
	}
	err := f.Inner.Put(ctx, key, data, opt)
	if fault == FaultAfter {
		return injected(fault, OpPut, key)
	}
	return err
}

// Get implements Store.
func (f Faulty) Get(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	return f.get(key, func() ([]byte, error) { return f.Inner.Get(ctx, key, offset, length) })
}

// GetInto is Get's fault injection around the inner store's GetInto.
func (f Faulty) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	return f.get(key, func() ([]byte, error) { return GetInto(ctx, f.Inner, key, buf) })
}

// get injects a read fault around read.
func (f Faulty) get(key string, read func() ([]byte, error)) ([]byte, error) {
	fault := f.fault(OpGet, key)
	if fault == FaultBefore {
		return nil, injected(fault, OpGet, key)
	}
	data, err := read()
	if fault == FaultAfter {
		return nil, injected(fault, OpGet, key)
	}
	return data, err
}

// List implements Store.
func (f Faulty) List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error) {
	fault := f.fault(OpList, prefix)
	if fault == FaultBefore {
		return ListPage{}, injected(fault, OpList, prefix)
	}
	page, err := f.Inner.List(ctx, prefix, startAfter, max)
	if fault == FaultAfter {
		return ListPage{}, injected(fault, OpList, prefix)
	}
	return page, err
}

// Delete implements Store.
func (f Faulty) Delete(ctx context.Context, key string) error {
	fault := f.fault(OpDelete, key)
	if fault == FaultBefore {
		return injected(fault, OpDelete, key)
	}
	err := f.Inner.Delete(ctx, key)
	if fault == FaultAfter {
		return injected(fault, OpDelete, key)
	}
	return err
}

// FaultRate is the chance, per call, of each kind of fault for one Op.
// BeforeProb+AfterProb must not exceed 1.
type FaultRate struct {
	BeforeProb float64
	AfterProb  float64
}

// RandomInjector fails calls at random with per-Op rates. Its randomness
// comes from the *rand.Rand it is given, so a seed replays the same faults
// for the same sequence of calls. It draws exactly one number per call,
// whatever the rates, so changing a rate does not shift the faults of
// later calls.
type RandomInjector struct {
	mu    sync.Mutex
	rng   *rand.Rand // guarded by mu: *rand.Rand is not safe for concurrent use
	rates [opCount]FaultRate
}

// NewRandomInjector returns an injector drawing from rng with the given
// rates; Ops missing from rates never fail.
func NewRandomInjector(rng *rand.Rand, rates map[Op]FaultRate) *RandomInjector {
	r := &RandomInjector{rng: rng}
	for op, rate := range rates {
		if op < 0 || op >= opCount {
			panic(fmt.Sprintf("objectio: fault rate for unknown %v", op))
		}
		if rate.BeforeProb < 0 || rate.AfterProb < 0 || rate.BeforeProb+rate.AfterProb > 1 {
			panic(fmt.Sprintf("objectio: fault rate for %v is not a probability split: %+v", op, rate))
		}
		r.rates[op] = rate
	}
	return r
}

// MaybeFail implements Injector.
func (r *RandomInjector) MaybeFail(op Op, key string) Fault {
	r.mu.Lock()
	x := r.rng.Float64()
	r.mu.Unlock()
	if op < 0 || op >= opCount {
		return FaultNone
	}
	rate := r.rates[op]
	switch {
	case x < rate.BeforeProb:
		return FaultBefore
	case x < rate.BeforeProb+rate.AfterProb:
		return FaultAfter
	}
	return FaultNone
}
