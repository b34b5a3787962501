package sim

import (
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	groupName         = "g"
	sessionTimeout    = 600 * time.Millisecond
	rebalanceTimeout  = time.Second
	memberHeartbeat   = 150 * time.Millisecond
	memberCommitEvery = 100 * time.Millisecond
	// commitQuiet is how long a member waits after a commit that got no
	// answer before it commits again: the lost request may still be
	// travelling (through a paused agent), and landing after a newer
	// commit would move the offset back, as it could with any Kafka
	// client. Past this every such request is delivered or dropped.
	commitQuiet = 3 * time.Second
)

// Member is a consumer-group member as Kafka clients implement the classic
// protocol: JoinGroup (with the member-id round trip), SyncGroup (the leader
// assigns partitions round-robin), heartbeats, OffsetFetch to start from the
// committed offsets, fetches, and OffsetCommit of what it consumed, one
// commit in flight at a time. It rejoins on the errors that say so.
type Member struct {
	w    *World
	name string
	up   bool
	inc  int

	memberID   string
	generation int32
	stable     bool
	assigned   []int32
	pos        map[int32]int64
	committed  map[int32]int64 // what this member last committed (acknowledged)
	committing bool
	quietUntil time.Duration
	joinSeq    int // invalidates the replies to earlier joins
}

func (m *Member) Name() string     { return m.name }
func (m *Member) Incarnation() int { return m.inc }
func (m *Member) Up() bool         { return m.up }

func (m *Member) start() {
	m.up = true
	m.inc++
	m.memberID, m.generation, m.stable, m.assigned = "", -1, false, nil
	m.committing = false
	m.w.logf("%s starts", m.name)
	m.join()
	inc := m.inc
	m.w.after(memberHeartbeat, m.name+" heartbeat", func() { m.heartbeat(inc) })
	m.w.after(memberCommitEvery, m.name+" commit", func() { m.commitLoop(inc) })
	m.w.after(m.w.between(time.Millisecond, 10*time.Millisecond), m.name+" poll", func() { m.pollLoop(inc) })
}

// crash stops the member without leaving: its session expires.
func (m *Member) crash() {
	if !m.up {
		return
	}
	m.w.logf("%s crashes", m.name)
	m.up = false
	m.inc++
}

func (m *Member) alive(inc int) bool { return m.up && m.inc == inc }

// request sends a group request to a random agent and handles the reply,
// unless the member restarted or rejoined since.
func (m *Member) request(req kmsg.Request, onReply func(kmsg.Response)) {
	a := m.w.agents[m.w.rng.Intn(len(m.w.agents))]
	inc := m.inc
	m.w.ops++
	m.w.net.Send(m, a, kmsg.NameForKey(req.Key()), func() {
		a.group(m.name, req, func(resp kmsg.Response) {
			m.w.net.Send(a, m, kmsg.NameForKey(req.Key())+" reply", func() {
				if m.alive(inc) {
					onReply(resp)
				}
			})
		})
	})
}

// rejoin abandons the current generation and joins again soon.
func (m *Member) rejoin(resetID bool) {
	m.stable = false
	if resetID {
		m.memberID = ""
	}
	m.joinSeq++
	seq := m.joinSeq
	inc := m.inc
	m.w.after(m.w.between(time.Millisecond, 30*time.Millisecond), m.name+" rejoin", func() {
		if m.alive(inc) && m.joinSeq == seq {
			m.join()
		}
	})
}

func (m *Member) join() {
	m.joinSeq++
	seq := m.joinSeq
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(9)
	req.Group, req.MemberID, req.ProtocolType = groupName, m.memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(sessionTimeout/time.Millisecond), int32(rebalanceTimeout/time.Millisecond)
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "sim", []byte(m.name)
	req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
	inc := m.inc
	m.request(req, func(r kmsg.Response) {
		if m.joinSeq != seq {
			return
		}
		resp := r.(*kmsg.JoinGroupResponse)
		switch resp.ErrorCode {
		case 0:
			m.memberID, m.generation = resp.MemberID, resp.Generation
			m.sync(resp)
		case kerr.MemberIDRequired.Code:
			m.memberID = resp.MemberID
			m.join()
		case kerr.UnknownMemberID.Code:
			m.rejoin(true)
		default:
			m.rejoin(false)
		}
	})
	m.w.after(2*rebalanceTimeout, m.name+" join timeout", func() {
		if m.alive(inc) && m.joinSeq == seq && !m.stable {
			m.rejoin(false)
		}
	})
}

func (m *Member) sync(join *kmsg.JoinGroupResponse) {
	seq := m.joinSeq
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(5)
	req.Group, req.Generation, req.MemberID = groupName, m.generation, m.memberID
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), join.Protocol
	if join.LeaderID == m.memberID {
		req.GroupAssignment = assign(join.Members, m.w.cfg.Partitions)
	}
	m.request(req, func(r kmsg.Response) {
		if m.joinSeq != seq {
			return
		}
		resp := r.(*kmsg.SyncGroupResponse)
		switch resp.ErrorCode {
		case 0:
			m.assigned = decodeAssignment(resp.MemberAssignment)
			m.fetchCommitted(seq)
		case kerr.UnknownMemberID.Code:
			m.rejoin(true)
		default:
			m.rejoin(false)
		}
	})
}

// assign gives partitions round-robin to the members sorted by id.
func assign(members []kmsg.JoinGroupResponseMember, partitions int) []kmsg.SyncGroupRequestGroupAssignment {
	ids := make([]string, len(members))
	for i, mem := range members {
		ids[i] = mem.MemberID
	}
	sort.Strings(ids)
	parts := make(map[string][]int32, len(ids))
	for p := 0; p < partitions; p++ {
		id := ids[p%len(ids)]
		parts[id] = append(parts[id], int32(p))
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, len(ids))
	for i, id := range ids {
		out[i] = kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: encodeAssignment(parts[id])}
	}
	return out
}

func encodeAssignment(ps []int32) []byte {
	b := make([]byte, 0, 4*len(ps))
	for _, p := range ps {
		b = binary.BigEndian.AppendUint32(b, uint32(p))
	}
	return b
}

func decodeAssignment(b []byte) []int32 {
	var ps []int32
	for len(b) >= 4 {
		ps = append(ps, int32(binary.BigEndian.Uint32(b)))
		b = b[4:]
	}
	return ps
}

// fetchCommitted starts consuming the assigned partitions at their
// committed offsets, and checks that no acknowledged commit went back.
func (m *Member) fetchCommitted(seq int) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(8)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = groupName
	t := kmsg.NewOffsetFetchRequestGroupTopic()
	t.Topic, t.Partitions = topic, m.assigned
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{t}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	floor := m.w.check.commitFloor(m.assigned) // acknowledged before we asked
	m.request(req, func(r kmsg.Response) {
		if m.joinSeq != seq {
			return
		}
		resp := r.(*kmsg.OffsetFetchResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			m.rejoin(false)
			return
		}
		m.pos = map[int32]int64{}
		m.committed = map[int32]int64{}
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					m.rejoin(false)
					return
				}
				off := max(rp.Offset, 0)
				m.w.check.committedRead(m.name, rp.Partition, rp.Offset, floor[rp.Partition])
				m.pos[rp.Partition], m.committed[rp.Partition] = off, off
			}
		}
		m.stable = true
		m.w.logf("%s is stable in generation %d with partitions %v", m.name, m.generation, m.assigned)
	})
}

func (m *Member) heartbeat(inc int) {
	if !m.alive(inc) {
		return
	}
	m.w.after(memberHeartbeat, m.name+" heartbeat", func() { m.heartbeat(inc) })
	if m.memberID == "" || m.generation < 0 {
		return
	}
	seq := m.joinSeq
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(4)
	req.Group, req.Generation, req.MemberID = groupName, m.generation, m.memberID
	m.request(req, func(r kmsg.Response) {
		if m.joinSeq != seq {
			return
		}
		switch r.(*kmsg.HeartbeatResponse).ErrorCode {
		case 0:
		case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
			m.rejoin(true)
		case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
			m.rejoin(false)
		}
	})
}

// commitLoop commits the consumed positions, one commit at a time.
func (m *Member) commitLoop(inc int) {
	if !m.alive(inc) {
		return
	}
	m.w.after(memberCommitEvery, m.name+" commit", func() { m.commitLoop(inc) })
	if !m.stable || m.committing || m.w.now < m.quietUntil {
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation, req.MemberID = groupName, m.generation, m.memberID
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	sent := map[int32]int64{}
	for _, p := range m.assigned {
		if m.pos[p] > m.committed[p] {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, m.pos[p]
			rt.Partitions = append(rt.Partitions, rp)
			sent[p] = m.pos[p]
		}
	}
	if len(rt.Partitions) == 0 {
		return
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	m.w.logf("%s commits %v in generation %d", m.name, sent, m.generation)
	m.committing = true
	answered := false
	m.request(req, func(r kmsg.Response) {
		answered = true
		m.committing = false
		for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				switch p.ErrorCode {
				case 0:
					m.committed[p.Partition] = sent[p.Partition]
					m.w.check.commitAcked(m.name, p.Partition, sent[p.Partition])
				case kerr.UnknownMemberID.Code:
					m.rejoin(true)
				case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
					m.rejoin(false)
				}
			}
		}
	})
	m.w.after(requestTimeout, m.name+" commit timeout", func() {
		if m.alive(inc) && !answered && m.committing {
			m.committing = false
			m.quietUntil = m.w.now + commitQuiet
		}
	})
}

// pollLoop fetches the assigned partitions from the member's positions.
func (m *Member) pollLoop(inc int) {
	if !m.alive(inc) {
		return
	}
	m.w.after(m.w.between(2*time.Millisecond, 20*time.Millisecond), m.name+" poll", func() { m.pollLoop(inc) })
	if !m.stable || len(m.assigned) == 0 {
		return
	}
	p := m.assigned[m.w.rng.Intn(len(m.assigned))]
	offset := m.pos[p]
	seq := m.joinSeq
	a := m.w.agents[m.w.rng.Intn(len(m.w.agents))]
	m.w.ops++
	m.w.net.Send(m, a, "fetch", func() {
		a.fetch(topic, p, offset, func(r fetchResult) {
			m.w.net.Send(a, m, "fetch reply", func() {
				if !m.alive(inc) || m.joinSeq != seq || r.err != 0 || m.pos[p] != offset {
					return
				}
				for _, raw := range r.batches {
					m.pos[p] = readRecords(m.w, m.name, p, raw, m.pos[p])
				}
			})
		})
	})
}

// caughtUp reports whether the member committed everything it holds up to
// the high watermarks.
func (m *Member) caughtUp(hwm func(int32) int64) bool {
	if !m.up || !m.stable {
		return false
	}
	for _, p := range m.assigned {
		if m.committed[p] < hwm(p) {
			return false
		}
	}
	return true
}

func (m *Member) String() string {
	return fmt.Sprintf("%s(gen %d, %v)", m.name, m.generation, m.assigned)
}
