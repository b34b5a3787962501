package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sluicedb/sluice/internal/balancer"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/node"
)

// Cluster shapes.
const (
	// modeDistributed is the deployment under test: standby sequencers and
	// stateless agents behind a load balancer.
	modeDistributed = "distributed"
	// modeServe runs one `sluice serve` (agent and sequencer in one
	// process) behind the balancer and kills it as an agent: the same
	// harness against the single-process mode.
	modeServe = "serve"

	sequencerCount = 2
	agentCount     = 3

	// listenTimeout bounds the wait for a started agent to listen.
	listenTimeout = 30 * time.Second
)

type clusterConfig struct {
	mode        string
	bin         string // the sluice binary
	storeURL    string
	logDir      string
	lease       time.Duration // 0: the sequencer's default
	flushWindow time.Duration
	events      *slog.Logger
	onCrash     func(*proc, error)
}

// cluster is the running system: processes, the balancer in front of the
// agents, and a store handle for finding the active sequencer.
type cluster struct {
	cfg        clusterConfig
	balancer   *balancer.Balancer
	sequencers []*proc
	agents     []*proc
	store      objectio.Store
	balLog     *os.File
}

// startCluster starts the balancer, then the sequencers, then the agents,
// and returns once every agent listens. The agents advertise the balancer,
// so clients that follow Metadata keep talking to it.
func startCluster(cfg clusterConfig) (_ *cluster, err error) {
	c := &cluster{cfg: cfg}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if c.store, err = objectio.Open(cfg.storeURL); err != nil {
		return nil, err
	}
	agentAddrs := make([]string, agentCount)
	if cfg.mode == modeServe {
		agentAddrs = agentAddrs[:1]
	}
	for i := range agentAddrs {
		if agentAddrs[i], err = freeAddr(); err != nil {
			return nil, err
		}
	}
	if c.balLog, err = os.Create(filepath.Join(cfg.logDir, "balancer.log")); err != nil {
		return nil, err
	}
	balLog := slog.New(slog.NewTextHandler(c.balLog, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if c.balancer, err = balancer.Start("127.0.0.1:0", agentAddrs, balLog); err != nil {
		return nil, err
	}
	cfg.events.Info("balancer listening", "addr", c.balancer.Addr(), "agents", agentAddrs)

	if cfg.mode == modeServe {
		c.agents = append(c.agents, c.newProc("serve-0", roleAgent, agentAddrs[0], []string{"serve",
			"--listen", agentAddrs[0], "--store", cfg.storeURL, "--advertise", c.balancer.Addr(),
			"--admin-addr", "", "--flush-window", cfg.flushWindow.String(), "--log-level", "info"}))
	} else {
		for i := range sequencerCount {
			addr, err := freeAddr()
			if err != nil {
				return nil, err
			}
			// Both start as standbys: one that hears from no active
			// sequencer for a lease takes over, so one of them becomes
			// active by itself, as after any crash.
			args := []string{"sequencer", "--listen", addr, "--store", cfg.storeURL, "--standby",
				"--admin-addr", "", "--log-level", "info"}
			if cfg.lease > 0 {
				args = append(args, "--lease", cfg.lease.String())
			}
			c.sequencers = append(c.sequencers, c.newProc(fmt.Sprintf("sequencer-%d", i), roleSequencer, addr, args))
		}
		for i, addr := range agentAddrs {
			// Every agent is told of sequencer-0; agents find the
			// active sequencer through the log when that one is gone.
			c.agents = append(c.agents, c.newProc(fmt.Sprintf("agent-%d", i), roleAgent, addr, []string{"agent",
				"--listen", addr, "--store", cfg.storeURL, "--sequencer", c.sequencers[0].addr,
				"--advertise", c.balancer.Addr(), "--admin-addr", "",
				"--flush-window", cfg.flushWindow.String(), "--log-level", "info"}))
		}
	}
	for _, p := range c.all() {
		if err := p.start(); err != nil {
			return nil, err
		}
	}
	for _, p := range c.agents {
		if err := p.waitListening(listenTimeout); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cluster) newProc(name, role, addr string, args []string) *proc {
	return &proc{
		name: name, role: role, addr: addr, bin: c.cfg.bin, args: args,
		logPath: filepath.Join(c.cfg.logDir, name+".log"),
		events:  c.cfg.events, onCrash: c.cfg.onCrash,
	}
}

func (c *cluster) all() []*proc {
	return append(append([]*proc(nil), c.sequencers...), c.agents...)
}

// heal starts every process that is not running.
func (c *cluster) heal() error {
	for _, p := range c.all() {
		if err := p.start(); err != nil {
			return err
		}
	}
	return nil
}

// stop kills every process and closes the balancer.
func (c *cluster) stop() {
	for _, p := range c.all() {
		p.kill()
	}
	if c.balancer != nil {
		c.balancer.Close()
	}
	if c.balLog != nil {
		c.balLog.Close()
	}
}

// activeSequencer returns the process that owns the newest epoch entry,
// which is the active sequencer unless a takeover is under way.
func (c *cluster) activeSequencer(ctx context.Context) (*proc, sequencer.EpochOp, error) {
	op, err := node.FindActive(ctx, c.store)
	if err != nil {
		return nil, op, err
	}
	for _, p := range c.sequencers {
		if p.addr == op.Addr {
			return p, op, nil
		}
	}
	// The epoch entry may spell the host differently (localhost, [::1]):
	// the port alone identifies our process.
	_, port, _ := net.SplitHostPort(op.Addr)
	for _, p := range c.sequencers {
		if _, pp, _ := net.SplitHostPort(p.addr); port != "" && pp == port {
			return p, op, nil
		}
	}
	return nil, op, fmt.Errorf("the newest epoch entry (epoch %d, owner %q) names address %q, which is none of our sequencers",
		op.Epoch, op.Owner, op.Addr)
}
