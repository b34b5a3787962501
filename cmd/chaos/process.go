package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sluicedb/sluice/internal/subprocess"
	"github.com/sluicedb/sluice/objectio"
)

// Roles of the processes the run starts.
const (
	roleAgent     = "agent"
	roleSequencer = "sequencer"
)

// proc is one sluice process that the run starts, kills and restarts on the
// same address. Its stderr and stdout go to one log file, appended to
// across restarts with a marker line, so one file tells a process's whole
// story.
type proc struct {
	name    string // agent-0, sequencer-1
	role    string
	addr    string // --listen
	bin     string
	args    []string
	logPath string
	events  *slog.Logger
	// onCrash is called, in its own goroutine, when the process exits
	// without having been killed by the run.
	onCrash func(p *proc, err error)

	mu      sync.Mutex // guards everything below
	sp      *subprocess.Process
	killing bool // the run is killing sp: its exit is expected
	starts  int
}

// start starts the process. Starting a running process does nothing.
func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sp != nil {
		return nil
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	p.starts++
	fmt.Fprintf(logFile, "--- chaos: %s start %d: %s %s\n", time.Now().Format(time.RFC3339Nano),
		p.starts, p.bin, commandLine(p.args))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	sp, err := subprocess.Start(cmd)
	if err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	p.sp, p.killing = sp, false
	p.events.Info("started", "proc", p.name, "pid", sp.Pid(), "start", p.starts)
	go p.watch(sp)
	return nil
}

// watch waits for sp to exit and reports an exit the run did not cause.
func (p *proc) watch(sp *subprocess.Process) {
	<-sp.Exited()
	p.mu.Lock()
	crashed := p.sp == sp && !p.killing
	if crashed {
		p.sp = nil
	}
	p.mu.Unlock()
	if crashed {
		p.events.Error("exited by itself", "proc", p.name, "err", sp.Err())
		if p.onCrash != nil {
			p.onCrash(p, sp.Err())
		}
	}
}

// kill SIGKILLs the process and waits for it to exit. It reports whether
// the process was running.
func (p *proc) kill() bool {
	p.mu.Lock()
	sp := p.sp
	if sp == nil {
		p.mu.Unlock()
		return false
	}
	p.killing = true
	p.mu.Unlock()

	sp.Kill()

	p.mu.Lock()
	if p.sp == sp {
		p.sp = nil
	}
	p.mu.Unlock()
	p.events.Info("killed", "proc", p.name, "pid", sp.Pid())
	return true
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sp != nil
}

// exited returns a channel closed when the current incarnation exits, or
// nil when none is running.
func (p *proc) exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sp == nil {
		return nil
	}
	return p.sp.Exited()
}

// waitListening waits until the process accepts TCP connections on its
// address, fails if it exits first, and gives up after timeout.
func (p *proc) waitListening(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		exited := p.exited()
		if exited == nil {
			return fmt.Errorf("%s exited before listening on %s (log %s):\n%s", p.name, p.addr, p.logPath, subprocess.LogTail(p.logPath, logTailBytes))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on %s after %v: %v (log %s):\n%s", p.name, p.addr, timeout, err, p.logPath, subprocess.LogTail(p.logPath, logTailBytes))
		}
		select {
		case <-exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// commandLine renders args for a log, shell-quoted where needed (an empty
// --admin-addr), with the credentials in store URLs hidden.
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, "://") {
			a = objectio.RedactStoreURL(a)
		}
		if a == "" || strings.ContainsAny(a, " &?'\"") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// logTailBytes is how much of a process's log an error shows.
const logTailBytes = 2 << 10

// freeAddr returns a loopback address with a port that was free a moment
// ago. Another process may take it before ours binds; the caller then sees
// the process fail to listen.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
