package objectio

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Latency draws per-call delays uniformly from [Min, Max].
type Latency struct {
	Min, Max time.Duration
	mu       sync.Mutex
	rng      *rand.Rand
}

// ParseLatency reads "30ms-70ms" (uniform between the two) or "50ms"
// (fixed). The empty string means none (nil).
func ParseLatency(s string, seed uint64) (*Latency, error) {
	if s == "" {
		return nil, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	min, err := time.ParseDuration(lo)
	if err != nil {
		return nil, fmt.Errorf("latency %q: %w", s, err)
	}
	max := min
	if found {
		if max, err = time.ParseDuration(hi); err != nil {
			return nil, fmt.Errorf("latency %q: %w", s, err)
		}
	}
	if min < 0 || max < min {
		return nil, fmt.Errorf("latency %q: want MIN-MAX with 0 <= MIN <= MAX", s)
	}
	return &Latency{Min: min, Max: max, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// draw returns one delay.
func (l *Latency) draw() time.Duration {
	if l.Max == l.Min {
		return l.Min
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Min + time.Duration(l.rng.Int64N(int64(l.Max-l.Min)+1))
}

// wait sleeps for one drawn delay; a nil Latency does not wait.
func (l *Latency) wait() {
	if l != nil {
		time.Sleep(l.draw())
	}
}

// FaultyConfig is the faulty wrapper as flags describe it.
type FaultyConfig struct {
	Latency          string  // "30ms-70ms"
	PutLatency       string  // more, for PUTs only, before they happen
	ErrorRate        float64 // calls that fail without happening
	LostResponseRate float64 // calls that happen but report an error
	Seed             uint64
}

// Enabled reports whether the config injects anything.
func (c FaultyConfig) Enabled() bool {
	return c.Latency != "" || c.PutLatency != "" || c.ErrorRate > 0 || c.LostResponseRate > 0
}

// WrapFaulty wraps inner as c says, or returns inner when c injects nothing.
func WrapFaulty(inner Store, c FaultyConfig) (Store, error) {
	if !c.Enabled() {
		return inner, nil
	}
	lat, err := ParseLatency(c.Latency, c.Seed)
	if err != nil {
		return nil, err
	}
	putLat, err := ParseLatency(c.PutLatency, c.Seed+2)
	if err != nil {
		return nil, err
	}
	if c.ErrorRate < 0 || c.LostResponseRate < 0 || c.ErrorRate+c.LostResponseRate > 1 {
		return nil, fmt.Errorf("error rate %v and lost-response rate %v must be probabilities that sum to at most 1", c.ErrorRate, c.LostResponseRate)
	}
	rate := FaultRate{BeforeProb: c.ErrorRate, AfterProb: c.LostResponseRate}
	inj := NewRandomInjector(rand.New(rand.NewPCG(c.Seed, c.Seed+1)), map[Op]FaultRate{OpPut: rate, OpGet: rate, OpList: rate, OpDelete: rate})
	return Faulty{Inner: inner, Injector: inj, Latency: lat, PutLatency: putLat}, nil
}
