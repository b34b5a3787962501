package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/discovery"
	"github.com/sluicedb/sluice/sequencer/group"
	"github.com/sluicedb/sluice/sequencer/link"
	"github.com/sluicedb/sluice/sequencer/node"
)

// runSequencer is `sluice sequencer`: the sequencer alone, serving agents
// over the link protocol. Without --standby it takes over at once; with it,
// it follows the active sequencer and takes over when that one has been
// silent for a lease. A sequencer that is fenced (another took over) stops
// acknowledging at once, drops its connections and follows as a standby.
func runSequencer(args []string) error {
	fs := flag.NewFlagSet("sequencer", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9093", "address agents and standbys connect to")
	advertise := fs.String("advertise", "", "address recorded in the epoch entry for agents to find (default: the listen address)")
	standby := fs.Bool("standby", false, "follow the active sequencer and take over when it is gone, instead of taking over at once")
	lease := fs.Duration("lease", discovery.DefaultLease, "how long a standby (or an agent) waits without hearing from the active sequencer before it gives up on it")
	heartbeat := fs.Duration("heartbeat", link.DefaultHeartbeatEvery, "how often the active sequencer tells its followers it is alive; keep it well under --lease")
	groupDelay := fs.Duration("group-initial-rebalance-delay", 3*time.Second, "how long a new consumer group waits for more members before its first rebalance")
	sf := addStoreFlags(fs)
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	if *heartbeat*3 > *lease {
		return fmt.Errorf("--heartbeat %v is too long for --lease %v: followers would give up between heartbeats", *heartbeat, *lease)
	}
	log, st, err := sf.open()
	if err != nil {
		return err
	}
	addr := *advertise
	if addr == "" {
		addr = *listen
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := objectio.CheckConditionalCreate(ctx, st); err != nil {
		return explainStoreError(fmt.Errorf("store check: %w", err), *sf.store)
	}
	if *sf.adminAddr != "" {
		go serveAdmin(*sf.adminAddr, nil, log)
	}
	cfg := node.Config{Name: "seq", Addr: addr, Logger: log,
		Groups: group.Config{InitialRebalanceDelay: max(noneIfZero(*groupDelay), 0)}}
	for follow := *standby; ; follow = true {
		var replica *sequencer.State
		if follow {
			log.Info("sequencer standing by", "lease", *lease)
			if replica, err = standBy(ctx, st, addr, *lease, log); err != nil {
				return nil // shutting down
			}
		}
		n, err := node.StartFrom(ctx, st, cfg, replica)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("takeover failed; standing by again", "err", err)
			continue
		}
		fenced, err := serveLink(ctx, n, *listen, *heartbeat, log)
		n.Close()
		if err != nil {
			return err
		}
		if !fenced {
			return nil // shutting down
		}
		log.Warn("sequencer fenced: another sequencer appended an epoch entry; stopped acknowledging and demoting to standby")
	}
}

// serveLink serves n to agents until ctx ends (false) or n is fenced (true).
func serveLink(ctx context.Context, n *node.Node, listen string, heartbeat time.Duration, log *slog.Logger) (fenced bool, err error) {
	var ln net.Listener
	// A demoted sequencer's listener may still be closing.
	for attempt := 0; ; attempt++ {
		if ln, err = net.Listen("tcp", listen); err == nil {
			break
		}
		if attempt == 50 {
			return false, fmt.Errorf("listen %s: %w", listen, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv := link.Serve(n, ln, link.ServerConfig{HeartbeatEvery: heartbeat, Logger: log})
	defer srv.Close()
	log.Info("sequencer active", "listen", srv.Addr(), "durable", n.Durable())
	select {
	case <-ctx.Done():
		return false, nil
	case <-n.Fenced():
		return true, nil
	}
}

// standBy follows the active sequencer until the Follower decides to take
// over, and returns the replica it kept (nil if it never got one, or if it
// is unusable): the takeover replays only the log after it.
func standBy(ctx context.Context, st objectio.Store, self string, lease time.Duration, log *slog.Logger) (*sequencer.State, error) {
	var (
		mu      sync.Mutex
		replica *sequencer.State
	)
	took := make(chan struct{})
	c := link.NewClient(link.ClientConfig{Self: self, Standby: true, Lease: lease, Store: st, Logger: log,
		OnTakeOver: func() { close(took) }})
	go c.Follow(func(s *sequencer.State) {
		mu.Lock()
		defer mu.Unlock()
		replica = s
	}, func(u sequencer.Update) {
		mu.Lock()
		defer mu.Unlock()
		if replica == nil {
			return
		}
		if u.Index != replica.Index+1 {
			replica = nil // recover from the store instead
			return
		}
		if err := replica.Apply(u.Index, u.Entry); err != nil {
			log.Error("standby replica cannot apply an entry; will recover from the store", "entry", u.Index, "err", err)
			replica = nil
		}
	})
	select {
	case <-took:
	case <-ctx.Done():
		c.Close()
		return nil, errors.New("shutting down")
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	return replica, nil
}
