package server

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/sequencer/group"
	"github.com/sluicedb/sluice/sequencer/node"
)

// Standalone is `sluice serve`: a sequencer and an agent in one process,
// sharing one store, with the agent listening for Kafka clients.
type Standalone struct {
	Node   *node.Node
	Agent  *Agent
	Server *Server
}

// StartStandalone recovers the sequencer from store, starts an agent on it
// and listens on listen. cfg.AdvertiseHost/Port default to the bound address.
func StartStandalone(ctx context.Context, store objectio.Store, listen string, cfg Config) (*Standalone, error) {
	cfg.setDefaults()
	if listen == "" {
		listen = "127.0.0.1:9092"
	}
	// Bind first when the port is 0, so that the advertised address is real.
	if _, port, err := net.SplitHostPort(listen); err == nil && port == "0" {
		free, err := freePort(listen)
		if err != nil {
			return nil, err
		}
		listen = free
	}
	if cfg.AdvertiseHost == "" {
		host, port, err := net.SplitHostPort(listen)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %w", listen, err)
		}
		p, _ := strconv.Atoi(port)
		cfg.AdvertiseHost, cfg.AdvertisePort = host, int32(p)
	}
	// Refuse a store that would let two sequencers both extend the log.
	if err := objectio.CheckConditionalCreate(ctx, store); err != nil {
		return nil, fmt.Errorf("store check: %w", err)
	}
	n, err := node.Start(ctx, store, node.Config{Name: cfg.AgentID, Addr: listen, Logger: cfg.Logger,
		Groups: group.Config{InitialRebalanceDelay: max(cfg.GroupInitialRebalanceDelay, 0)}})
	if err != nil {
		return nil, fmt.Errorf("start sequencer: %w", err)
	}
	a, err := NewAgent(cfg, n, store)
	if err != nil {
		n.Close()
		return nil, err
	}
	s, err := Serve(a, listen)
	if err != nil {
		a.Close(ctx)
		n.Close()
		return nil, err
	}
	return &Standalone{Node: n, Agent: a, Server: s}, nil
}

// Addr is the Kafka listener's address.
func (s *Standalone) Addr() string { return s.Server.Addr() }

// Close flushes and acknowledges what is buffered (bounded by ctx), then
// stops listening and stops the sequencer.
func (s *Standalone) Close(ctx context.Context) {
	s.Agent.Close(ctx)
	_ = s.Server.Close(ctx)
	s.Node.Close()
}

// freePort resolves host:0 to a concrete free port.
func freePort(listen string) (string, error) {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
