package group

import (
	"fmt"
	"sort"
)

// checkInvariants states what must hold between any two inputs. Tests call
// it after every step.
func (c *Coordinator) checkInvariants() error {
	armed := map[uint64]bool{}
	for _, t := range c.timers {
		armed[t.token] = true
	}
	names := make([]string, 0, len(c.groups))
	for name := range c.groups {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := c.groups[name]
		if err := g.check(name, armed); err != nil {
			return fmt.Errorf("group %q: %w", name, err)
		}
	}
	return nil
}

func (g *group) check(name string, armed map[uint64]bool) error {
	if g.name != name {
		return fmt.Errorf("held under the name %q", name)
	}
	if g.state == stateDead {
		return fmt.Errorf("a Dead group is held")
	}
	if g.state == stateEmpty && len(g.pending) == 0 {
		return fmt.Errorf("an Empty group without pending members was not forgotten")
	}
	// A group without members is Empty, or in a join phase that waits for
	// its initial delay or for pending members, which Kafka does not cut
	// short either.
	if len(g.members) > 0 && g.state == stateEmpty ||
		len(g.members) == 0 && g.state != stateEmpty && (g.state != statePreparingRebalance || g.initial == nil && len(g.pending) == 0) {
		return fmt.Errorf("%d members (%d pending) in state %s", len(g.members), len(g.pending), g.state)
	}
	if len(g.members) == 0 && g.leader != "" {
		return fmt.Errorf("leader %q without members", g.leader)
	}
	if len(g.members) > 0 && g.members[g.leader] == nil {
		return fmt.Errorf("leader %q is not a member", g.leader)
	}
	if len(g.members) > 0 && g.protocolType == "" {
		return fmt.Errorf("members but no protocol type")
	}
	awaiting := 0
	supported := map[string]int{}
	statics := 0
	for id, m := range g.members {
		if m.id != id {
			return fmt.Errorf("member %q held under %q", m.id, id)
		}
		if _, ok := g.pending[id]; ok {
			return fmt.Errorf("member %q is also pending", id)
		}
		if len(m.joins) > 0 {
			awaiting++
			if g.state != statePreparingRebalance {
				return fmt.Errorf("member %q has a JoinGroup parked in state %s", id, g.state)
			}
		}
		if len(m.syncs) > 0 && g.state != stateCompletingRebalance {
			return fmt.Errorf("member %q has a SyncGroup parked in state %s", id, g.state)
		}
		if !m.immune() && (m.timer == 0 || !armed[m.timer]) {
			return fmt.Errorf("member %q can time out but has no session timer", id)
		}
		if m.instanceID != nil {
			statics++
			if g.static[*m.instanceID] != id {
				return fmt.Errorf("static member %q: instance %q maps to %q", id, *m.instanceID, g.static[*m.instanceID])
			}
		}
		for i, p := range m.protocols {
			if !listed(m.protocols[:i], p.name) {
				supported[p.name]++
			}
		}
		if g.state == stateStable || g.state == stateCompletingRebalance {
			if !listed(m.protocols, g.protocol) {
				return fmt.Errorf("member %q does not support the selected protocol %q", id, g.protocol)
			}
		}
	}
	if statics != len(g.static) {
		return fmt.Errorf("%d static members but %d instance ids mapped", statics, len(g.static))
	}
	if awaiting != g.awaitingJoin {
		return fmt.Errorf("awaitingJoin is %d, but %d members have a JoinGroup parked", g.awaitingJoin, awaiting)
	}
	if len(supported) != len(g.supported) {
		return fmt.Errorf("supported protocols %v, want %v", g.supported, supported)
	}
	for p, n := range supported {
		if g.supported[p] != n {
			return fmt.Errorf("supported protocols %v, want %v", g.supported, supported)
		}
	}
	for id, token := range g.pending {
		if token == 0 || !armed[token] {
			return fmt.Errorf("pending member %q has no timer", id)
		}
	}
	if (g.joinTimer != 0) != (g.state == statePreparingRebalance) || g.joinTimer != 0 && !armed[g.joinTimer] {
		return fmt.Errorf("join timer %d in state %s", g.joinTimer, g.state)
	}
	if g.initial != nil && g.state != statePreparingRebalance {
		return fmt.Errorf("initial delay in state %s", g.state)
	}
	if g.syncTimer != 0 && (len(g.pendingSync) == 0 || !armed[g.syncTimer]) {
		return fmt.Errorf("sync timer armed with %d members pending sync", len(g.pendingSync))
	}
	if len(g.pendingSync) > 0 && g.syncTimer == 0 {
		return fmt.Errorf("%d members pending sync but no sync timer", len(g.pendingSync))
	}
	for id := range g.pendingSync {
		if g.members[id] == nil {
			return fmt.Errorf("pending sync member %q is not a member", id)
		}
		if g.state != stateCompletingRebalance && g.state != stateStable {
			return fmt.Errorf("members pending sync in state %s", g.state)
		}
	}
	return nil
}
