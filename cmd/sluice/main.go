// Command sluice runs Sluice, a Kafka-compatible streaming log whose brokers
// own no disks.
//
//	sluice serve     agent and sequencer in one process (the laptop default)
//	sluice sequencer the sequencer alone, active or standby (distributed mode)
//	sluice agent     a stateless agent following the sequencer (distributed mode)
//	sluice sim       the deterministic simulator
//	sluice bench     a load generator (produce, consume, e2e)
//	sluice inspect   the metadata log and partition index, read from a store
package main

import (
	"fmt"
	"os"
)

const usage = `usage: sluice <command> [flags]

commands:
  serve     run an agent and the sequencer in one process on one store
  sequencer run the sequencer alone (--standby: follow, take over when it is gone)
  agent     run a stateless agent that follows the active sequencer
  sim       run the deterministic simulator (-seed N -v, or -seeds N)
  bench     load generator: produce (default), consume, e2e; verifies what it reads back
  inspect   print the metadata log and a topic's partition index from a store

Run 'sluice <command> -h' for a command's flags. Every flag can also be set
by an environment variable: --flush-window is SLUICE_FLUSH_WINDOW.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "sequencer":
		err = runSequencer(os.Args[2:])
	case "agent":
		err = runAgent(os.Args[2:])
	case "sim":
		err = simulate(os.Args[2:])
	case "bench":
		err = loadgen(os.Args[2:])
	case "inspect":
		err = inspect(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "sluice: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}
