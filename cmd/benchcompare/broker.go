package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedb/sluice/internal/balancer"
	"github.com/sluicedb/sluice/internal/subprocess"
	"github.com/sluicedb/sluice/objectio/s3server"
)

// brokerSpec says how to start one broker under test.
type brokerSpec struct {
	name string
	// store is the Sluice store: "mem", "dir", or "minio" (a MinIO server
	// started for the run, as a process of its own; its CPU is not the
	// broker's). Empty for kfake.
	store string
	// args builds the command line for a broker on addr; store is the
	// store's URL.
	args func(addr, store string) []string
	bin  func(b binaries) string
	// agents > 0 makes it a distributed cluster instead: a `sluice
	// sequencer` and that many `sluice agent`s, behind a TCP balancer
	// listening on addr. args then builds the agents' extra flags.
	agents int
}

type binaries struct{ sluice, kfake string }

func brokerSpecs(sluiceFlags []string) []brokerSpec {
	serve := func(addr, store string) []string {
		args := []string{"serve", "--listen", addr, "--store", store, "--admin-addr=",
			"--log-level", "warn", "--auto-create-topics=true"}
		return append(args, sluiceFlags...)
	}
	sluice := func(b binaries) string { return b.sluice }
	return []brokerSpec{
		{name: "kfake", bin: func(b binaries) string { return b.kfake },
			args: func(addr, _ string) []string {
				_, port, _ := net.SplitHostPort(addr)
				return []string{"-port", port}
			}},
		{name: "sluice-mem", store: "mem", bin: sluice, args: serve},
		{name: "sluice-dir", store: "dir", bin: sluice, args: serve},
		{name: "sluice-minio", store: "minio", bin: sluice, args: serve},
		{name: "sluice-2agents", store: "dir", bin: sluice, agents: 2,
			args: func(string, string) []string { return sluiceFlags }},
	}
}

// brokerProc is a running broker process (for a cluster, the sequencer,
// with the agents in others and the balancer in lb).
type brokerProc struct {
	cmd    *exec.Cmd
	addr   string
	dir    string
	logf   *os.File
	exited chan error
	others []*exec.Cmd
	lb     *balancer.Balancer
	s3     *s3server.Server // the store's server, for a MinIO store
}

// startBroker starts spec's broker on a free port of 127.0.0.1 and waits
// until it answers Kafka requests.
func startBroker(ctx context.Context, spec brokerSpec, bins binaries) (*brokerProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "benchcompare-"+spec.name+"-")
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &brokerProc{addr: addr, dir: dir, logf: logf, exited: make(chan error, 1)}
	store, err := p.startStore(spec.store)
	if err != nil {
		p.stop()
		return nil, err
	}
	args := spec.args(addr, store)
	seqAddr, err := freeAddr()
	if err != nil {
		p.stop()
		return nil, err
	}
	if spec.agents > 0 {
		args = []string{"sequencer", "--listen", seqAddr, "--store", store, "--admin-addr=", "--log-level", "warn"}
	}
	p.cmd = exec.Command(spec.bin(bins), args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		p.cmd = nil
		p.stop()
		return nil, err
	}
	go func() { p.exited <- p.cmd.Wait() }()
	if spec.agents > 0 {
		if err := p.startAgents(spec, bins, seqAddr, store); err != nil {
			p.stop()
			return nil, err
		}
	}
	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// startStore returns the URL of the kind of store named, starting its
// server if it has one.
func (p *brokerProc) startStore(kind string) (string, error) {
	switch kind {
	case "":
		return "", nil // not a Sluice broker
	case "mem":
		return "mem://", nil
	case "dir":
		return "dir://" + filepath.Join(p.dir, "data"), nil
	case "minio":
		srv, err := s3server.Launch("minio", filepath.Join(p.dir, "minio"))
		if err != nil {
			return "", err
		}
		p.s3 = srv
		return srv.URL("bench/"), nil
	}
	return "", fmt.Errorf("unknown store %q", kind)
}

// readyMax bounds how long a broker may take to start.
const readyMax = 30 * time.Second

func (p *brokerProc) waitReady(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(readyMax)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := kadm.NewClient(cl).BrokerMetadata(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-p.exited:
			p.exited <- werr
			return fmt.Errorf("broker exited before it was ready (%v); its log ends:\n%s", werr, p.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker not ready after %v: %w; its log ends:\n%s", readyMax, err, p.logTail())
		}
	}
}

// logTailBytes is how much of a failed broker's log an error quotes.
const logTailBytes = 2048

// logTail is the end of the broker's output (its directory, log included,
// is removed when it stops).
func (p *brokerProc) logTail() string {
	return subprocess.LogTail(p.logf.Name(), logTailBytes)
}

// startAgents starts spec.agents agents following the sequencer at seqAddr,
// all advertising the balancer, and the balancer on p.addr.
func (p *brokerProc) startAgents(spec brokerSpec, bins binaries, seqAddr, store string) error {
	var addrs []string
	for range spec.agents {
		a, err := freeAddr()
		if err != nil {
			return err
		}
		addrs = append(addrs, a)
		cmd := exec.Command(spec.bin(bins), append([]string{"agent", "--listen", a, "--sequencer", seqAddr,
			"--advertise", p.addr, "--store", store, "--admin-addr=", "--log-level", "warn"}, spec.args(a, p.dir)...)...)
		cmd.Stdout, cmd.Stderr = p.logf, p.logf
		if err := cmd.Start(); err != nil {
			return err
		}
		p.others = append(p.others, cmd)
	}
	lb, err := balancer.Start(p.addr, addrs, nil)
	p.lb = lb
	return err
}

// pids are the broker's processes: their CPU time is the broker's.
func (p *brokerProc) pids() []int {
	pids := []int{p.cmd.Process.Pid}
	for _, o := range p.others {
		pids = append(pids, o.Process.Pid)
	}
	return pids
}

// stopMax is how long a broker gets to exit after SIGTERM before SIGKILL.
const stopMax = 15 * time.Second

// stop ends the broker and removes its directory.
func (p *brokerProc) stop() {
	if p.lb != nil {
		p.lb.Close()
	}
	for _, o := range p.others {
		_ = o.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { o.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopMax):
			_ = o.Process.Kill()
			<-done
		}
	}
	if p.cmd != nil {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopMax):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	if p.s3 != nil {
		p.s3.Stop()
	}
	p.logf.Close()
	os.RemoveAll(p.dir)
}

// freeAddr picks a free port on 127.0.0.1 (never Kafka's 9092: the kernel
// hands out ephemeral ports far above it).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if port == 9092 {
		return "", errors.New("the kernel offered port 9092; refusing it")
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}
