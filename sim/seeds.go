package sim

import (
	"runtime"
	"sync"
)

// Totals sums up many runs.
type Totals struct {
	Seeds  int64
	Ops    int64
	Faults FaultCounts
	Failed []Result // in the order they finished
}

// RunSeeds runs seeds [from, from+n) on all cores. onFailure, if set, is
// called (serially) with each failing run as it finishes.
func RunSeeds(from, n int64, onFailure func(Result)) Totals {
	var (
		mu   sync.Mutex
		next = from
		tot  = Totals{Seeds: n}
		wg   sync.WaitGroup
	)
	for i := 0; i < runtime.GOMAXPROCS(0); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				s := next
				next++
				mu.Unlock()
				if s >= from+n {
					return
				}
				r := Run(s, nil)
				mu.Lock()
				tot.Ops += r.Ops
				tot.Faults.add(r.Faults)
				if r.Failed() {
					tot.Failed = append(tot.Failed, r)
					if onFailure != nil {
						onFailure(r)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return tot
}
