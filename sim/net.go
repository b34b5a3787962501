package sim

import "time"

// Network delivers messages between processes with random delay (so
// messages reorder), drops, and partitions. A message to a process that
// restarted since it was sent is lost, as its connection would be.
type Network struct {
	w   *World
	cut map[[2]string]time.Duration // pair (sorted) → partitioned until
}

// proc is what the network needs of a process.
type proc interface {
	Name() string
	Incarnation() int // changes on every crash
	Up() bool
}

func pair(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

func (n *Network) partitioned(a, b string) bool {
	until, ok := n.cut[pair(a, b)]
	return ok && n.w.now < until
}

// Partition cuts a and b off from each other for d.
func (n *Network) Partition(a, b string, d time.Duration) {
	n.cut[pair(a, b)] = n.w.now + d
	n.w.logf("partition %s <-> %s for %v", a, b, d)
}

// Heal removes every partition (liveness phase).
func (n *Network) Heal() { n.cut = map[[2]string]time.Duration{} }

// Send delivers fn at to, unless the message is dropped, the two are
// partitioned (at send or delivery), or to restarted or is down on arrival.
// It reports whether the message was put on the wire.
func (n *Network) Send(from, to proc, what string, fn func()) {
	if !from.Up() || n.partitioned(from.Name(), to.Name()) || n.w.fault(n.w.cfg.NetDrop) {
		n.w.logf("drop %s: %s -> %s", what, from.Name(), to.Name())
		return
	}
	inc := to.Incarnation()
	d := n.w.between(n.w.cfg.NetDelayMin, n.w.cfg.NetDelayMax)
	n.w.after(d, "deliver "+what+" "+from.Name()+"->"+to.Name(), func() {
		if !to.Up() || to.Incarnation() != inc || n.partitioned(from.Name(), to.Name()) {
			return
		}
		n.w.wake(to, func() {
			if to.Up() && to.Incarnation() == inc {
				fn()
			}
		})
	})
}
