package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicedb/sluice/sim"
)

// simulate runs the deterministic simulator: one seed with its event log
// (-seed N -v), or many seeds on all cores (-seeds N).
func simulate(args []string) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	seed := fs.Int64("seed", 0, "run this one seed")
	seeds := fs.Int64("seeds", 1000, "run this many seeds, from -from")
	from := fs.Int64("from", 1, "first seed of -seeds")
	verbose := fs.Bool("v", false, "with -seed: print the event log")
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	if *seed != 0 {
		var out io.Writer
		if *verbose {
			out = os.Stdout
		}
		r := sim.Run(*seed, out)
		fmt.Printf("seed %d: %d client operations, %d events, %v virtual, trace %016x\n", r.Seed, r.Ops, r.Events, r.Virtual, r.Trace)
		fmt.Printf("config: %+v\n", r.Config)
		for _, v := range r.Violations {
			fmt.Println("VIOLATION", v)
		}
		if r.Failed() {
			return fmt.Errorf("seed %d failed", r.Seed)
		}
		return nil
	}
	start := time.Now()
	tot := sim.RunSeeds(*from, *seeds, func(r sim.Result) {
		fmt.Printf("seed %d FAILED: %s\n  replay: sluice sim -seed %d -v\n", r.Seed, r.Violations[0], r.Seed)
	})
	el := time.Since(start)
	fmt.Printf("%d seeds, %d simulated client operations, %d violations, %.1fs (%.0f seeds/s, %.0f ops/s)\n",
		tot.Seeds, tot.Ops, len(tot.Failed), el.Seconds(), float64(tot.Seeds)/el.Seconds(), float64(tot.Ops)/el.Seconds())
	f := tot.Faults
	fmt.Printf("distributed-mode faults: %d standby takeovers, %d sequencers fenced and demoted, %d active sequencers isolated, %d rediscoveries of a new sequencer\n",
		f.Takeovers, f.Demotions, f.Isolations, f.Rediscovered)
	if len(tot.Failed) > 0 {
		return fmt.Errorf("%d seeds failed", len(tot.Failed))
	}
	return nil
}
