package main

import (
	"context"
	"flag"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/link"
	"github.com/sluicedb/sluice/server"
)

// runAgent is `sluice agent`: a stateless agent serving Kafka clients,
// following the active sequencer over the link protocol. Agents behind a
// load balancer all advertise the balancer's address.
func runAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9092", "Kafka listener address")
	seqAddr := fs.String("sequencer", "127.0.0.1:9093", "the sequencer's link address to try first; when it is gone the agent finds the active one in the metadata log")
	lease := fs.Duration("lease", discovery.DefaultLease, "how long the agent waits without hearing from the sequencer before it looks for another")
	holdMax := fs.Duration("hold-max", link.DefaultHoldMax, "how long a request waits for a sequencer before it fails with a retriable error")
	sf := addStoreFlags(fs)
	af := addAgentFlags(fs)
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	log, st, err := sf.open()
	if err != nil {
		return err
	}
	cfg, err := af.config("agent", log)
	if err != nil {
		return err
	}
	limitMemory(cfg, st, log)
	cfg.OtherAgents = true
	if cfg.AdvertiseHost == "" {
		if cfg.AdvertiseHost, cfg.AdvertisePort, err = splitHostPort(*listen); err != nil {
			return fmt.Errorf("--listen: %w", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c := link.NewClient(link.ClientConfig{Seed: *seqAddr, Lease: *lease, HoldMax: *holdMax, Store: st, Logger: log})
	defer c.Close()
	// NewAgent waits for the sequencer's state; a signal meanwhile must
	// end the wait.
	started := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			c.Close()
		case <-started:
		}
	}()
	log.Info("agent looking for the sequencer", "sequencer", *seqAddr)
	a, err := server.NewAgent(cfg, c, st)
	close(started)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return explainStoreError(err, *sf.store)
	}
	srv, err := server.Serve(a, *listen)
	if err != nil {
		return err
	}
	log.Info("sluice agent serving", "kafka", srv.Addr(), "advertise", fmt.Sprintf("%s:%d", cfg.AdvertiseHost, cfg.AdvertisePort),
		"store", objectio.RedactStoreURL(*sf.store), "flush_window", cfg.FlushWindow)
	if *sf.adminAddr != "" {
		go serveAdmin(*sf.adminAddr, a, log)
	}
	<-ctx.Done()
	log.Info("shutting down: flushing and acknowledging buffered batches")
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.Close(closeCtx)
	_ = srv.Close(closeCtx)
	return nil
}
