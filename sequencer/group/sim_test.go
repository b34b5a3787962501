package group

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The simulation drives a Coordinator with clients that behave like
// consumers (join, sync, heartbeat, commit, leave, rejoin) and misbehave
// (fall silent, crash and restart, retry on a new connection, send with a
// stale member id), plus admin requests, all from one seeded rand. It checks
// the invariants after every input, that every request gets exactly one
// reply once time runs on, that a seed replays exactly, and that ticking
// only when an input arrives yields the same replies as ticking on time.

const (
	simSeeds = 40
	simSteps = 1500
)

func TestSimulationInvariantsAndLiveness(t *testing.T) {
	for seed := int64(1); seed <= simSeeds; seed++ {
		s := newSim(t, seed)
		s.run()
		s.drain()
	}
}

func TestSimulationReplaysExactly(t *testing.T) {
	for seed := int64(1); seed <= simSeeds/4; seed++ {
		a, b := newSim(t, seed), newSim(t, seed)
		a.run()
		b.run()
		if a.transcript.String() != b.transcript.String() {
			t.Fatalf("seed %d: two runs of the same inputs gave different replies\n%s", seed, firstDiff(a.transcript.String(), b.transcript.String()))
		}
	}
}

func TestSimulationLateTicksChangeNothing(t *testing.T) {
	for seed := int64(1); seed <= simSeeds/4; seed++ {
		onTime := newSim(t, seed)
		onTime.run()
		onTime.drain()
		// Replay the same inputs with no Tick at all until the end: every
		// timer fires only when the next input arrives.
		late := New(onTime.cfg)
		var tr strings.Builder
		for _, op := range onTime.ops {
			res := op(late)
			record(&tr, late.Replies())
			if res != "" {
				tr.WriteString(res + "\n")
			}
		}
		late.Tick(onTime.end)
		record(&tr, late.Replies())
		if onTime.transcript.String() != tr.String() {
			t.Fatalf("seed %d: ticking late changed the replies\n%s", seed, firstDiff(onTime.transcript.String(), tr.String()))
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

// record appends replies to a transcript: the request id and the encoded
// response, which covers every field.
func record(tr *strings.Builder, replies []Reply) {
	for _, r := range replies {
		fmt.Fprintf(tr, "%d k%d v%d %x\n", r.ID, r.Resp.Key(), r.Resp.GetVersion(), r.Resp.AppendTo(nil))
	}
}

type sim struct {
	t    *testing.T
	seed int64
	rng  *rand.Rand
	cfg  Config
	c    *Coordinator
	now  time.Time
	end  time.Time

	clients []*simClient
	groups  []string
	nextID  uint64
	owner   map[uint64]*simClient // request id -> client that sent it
	replied map[uint64]int
	usedIDs []string // member ids ever handed out, for zombies

	ops        []simOp // the inputs, to replay on another coordinator
	transcript strings.Builder
}

// simOp is one input. It returns a line for the transcript when the input
// has a result other than replies (a commit check, a delete).
type simOp func(c *Coordinator) string

type simPhase int

const (
	phaseIdle   simPhase = iota // must (re)join
	phaseJoined                 // got a JoinGroup response, must sync
	phaseStable                 // synced
)

type simClient struct {
	name      string
	group     string
	instance  *string
	joinV     int16
	ptype     string
	protocols []kmsg.JoinGroupRequestProtocol
	session   int32
	rebalance int32

	memberID string
	gen      int32
	leader   bool
	members  []string
	protocol *string
	phase    simPhase
	waiting  int // requests outstanding
	silent   time.Time
}

func newSim(t *testing.T, seed int64) *sim {
	rng := rand.New(rand.NewSource(seed))
	cfg := Config{
		InitialRebalanceDelay: []time.Duration{0, time.Second, 3 * time.Second}[rng.Intn(3)],
		GroupMaxSize:          []int{0, 0, 3}[rng.Intn(3)],
	}
	s := &sim{
		t: t, seed: seed, rng: rng, cfg: cfg, c: New(cfg), now: scriptBase,
		groups: []string{"g1", "g2", "g3"}, owner: map[uint64]*simClient{}, replied: map[uint64]int{},
	}
	names := []string{"range", "roundrobin", "sticky"}
	for i := 0; i < 3+rng.Intn(8); i++ {
		cl := &simClient{
			name:      fmt.Sprintf("c%d", i),
			group:     s.groups[rng.Intn(len(s.groups))],
			joinV:     []int16{0, 3, 4, 5, 7, 9}[rng.Intn(6)],
			ptype:     "consumer",
			session:   int32(6000 + rng.Intn(24000)),
			rebalance: int32(5000 + rng.Intn(55000)),
		}
		if cl.joinV >= 5 && rng.Intn(2) == 0 {
			inst := fmt.Sprintf("i%d", i)
			cl.instance = &inst
		}
		if rng.Intn(20) == 0 {
			cl.ptype = "connect"
		}
		for _, j := range rng.Perm(len(names))[:1+rng.Intn(len(names))] {
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name, p.Metadata = names[j], []byte(cl.name+"/"+names[j])
			cl.protocols = append(cl.protocols, p)
		}
		s.clients = append(s.clients, cl)
	}
	return s
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d at %s: %s", s.seed, s.now.Sub(scriptBase), fmt.Sprintf(format, args...))
}

// do runs an input now and records it for replay.
func (s *sim) do(op simOp) {
	s.ops = append(s.ops, op)
	res := op(s.c)
	s.collect(s.c.Replies())
	if res != "" {
		s.transcript.WriteString(res + "\n")
	}
	if err := s.c.checkInvariants(); err != nil {
		s.fatalf("%v", err)
	}
}

func (s *sim) id(cl *simClient) uint64 {
	s.nextID++
	s.owner[s.nextID] = cl
	if cl != nil {
		cl.waiting++
	}
	return s.nextID
}

// advanceTo ticks at every deadline on the way to t, as a punctual driver.
func (s *sim) advanceTo(t time.Time) {
	for {
		d, ok := s.c.NextDeadline()
		if !ok || d.After(t) {
			break
		}
		if d.Before(s.now) {
			s.fatalf("deadline %s is in the past", d.Sub(scriptBase))
		}
		s.now = d
		s.c.Tick(d)
		s.collect(s.c.Replies())
		if err := s.c.checkInvariants(); err != nil {
			s.fatalf("after Tick: %v", err)
		}
	}
	s.now = t
}

func (s *sim) run() {
	for step := 0; step < simSteps; step++ {
		s.advanceTo(s.now.Add(time.Duration(s.rng.Intn(1500)) * time.Millisecond))
		if s.rng.Intn(20) == 0 {
			s.admin()
			continue
		}
		s.act(s.clients[s.rng.Intn(len(s.clients))])
	}
	s.end = s.now.Add(time.Hour)
}

// drain lets time run on with no inputs: everything parked must be
// answered, every session must end, and every group be forgotten.
func (s *sim) drain() {
	s.advanceTo(s.end)
	s.c.Tick(s.end)
	s.collect(s.c.Replies())
	for id := uint64(1); id <= s.nextID; id++ {
		if s.replied[id] != 1 {
			s.fatalf("request %d answered %d times", id, s.replied[id])
		}
	}
	if len(s.c.groups) != 0 {
		s.fatalf("%d groups left after an hour of silence", len(s.c.groups))
	}
	if d, ok := s.c.NextDeadline(); ok {
		s.fatalf("a timer is still armed for %s", d.Sub(scriptBase))
	}
}

// collect records replies and updates the clients that get them.
func (s *sim) collect(replies []Reply) {
	record(&s.transcript, replies)
	for _, r := range replies {
		s.replied[r.ID]++
		if cl := s.owner[r.ID]; cl != nil {
			cl.waiting--
			s.handle(cl, r.Resp)
		}
	}
}

func (s *sim) handle(cl *simClient, resp kmsg.Response) {
	var code int16
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		code = r.ErrorCode
		switch code {
		case 0:
			cl.memberID, cl.gen, cl.phase = r.MemberID, r.Generation, phaseJoined
			cl.leader = r.LeaderID == r.MemberID && !r.SkipAssignment
			cl.protocol = r.Protocol
			cl.members = cl.members[:0]
			for _, m := range r.Members {
				cl.members = append(cl.members, m.MemberID)
			}
			s.usedIDs = append(s.usedIDs, r.MemberID)
			return
		case kerr.MemberIDRequired.Code:
			cl.memberID = r.MemberID
			cl.phase = phaseIdle
			return
		}
	case *kmsg.SyncGroupResponse:
		if code = r.ErrorCode; code == 0 {
			cl.phase = phaseStable
			return
		}
	case *kmsg.HeartbeatResponse:
		if code = r.ErrorCode; code == 0 {
			return
		}
	case *kmsg.LeaveGroupResponse:
		cl.memberID, cl.phase = "", phaseIdle
		return
	}
	cl.phase = phaseIdle
	switch code {
	case kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code, kerr.GroupMaxSizeReached.Code:
		cl.memberID = ""
	}
}

// act has a client do what a consumer would, or misbehave.
func (s *sim) act(cl *simClient) {
	r := s.rng.Intn(100)
	switch {
	case r < 3: // restart: a new incarnation that forgot its member id
		cl.memberID, cl.phase = "", phaseIdle
		return
	case r < 6: // fall silent (a long GC pause, a partition)
		cl.silent = s.now.Add(time.Duration(5+s.rng.Intn(40)) * time.Second)
		return
	case r < 9:
		s.zombie(cl)
		return
	case r < 11 && cl.waiting > 0 && cl.phase == phaseIdle:
		s.join(cl) // a retry on a new connection
		return
	}
	if cl.waiting > 0 || s.now.Before(cl.silent) {
		return
	}
	switch cl.phase {
	case phaseIdle:
		s.join(cl)
	case phaseJoined:
		s.sync(cl)
	case phaseStable:
		switch r := s.rng.Intn(100); {
		case r < 60:
			s.heartbeat(cl, cl.memberID, cl.gen)
		case r < 85:
			s.commit(cl.group, cl.gen, cl.memberID, cl.instance, s.rng.Intn(4) == 0)
		case r < 90:
			s.leave(cl)
		default:
			s.join(cl) // rejoin, perhaps as leader
		}
	}
}

func (s *sim) join(cl *simClient) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = cl.joinV
	req.Group = cl.group
	req.MemberID = cl.memberID
	req.InstanceID = cl.instance
	req.SessionTimeoutMillis = cl.session
	req.RebalanceTimeoutMillis = cl.rebalance
	req.ProtocolType = cl.ptype
	req.Protocols = cl.protocols
	id, now, from := s.id(cl), s.now, Client{ID: cl.name, Host: "h"}
	s.do(func(c *Coordinator) string { c.JoinGroupFrom(now, id, from, req); return "" })
}

func (s *sim) sync(cl *simClient) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = int16(s.rng.Intn(6))
	req.Group = cl.group
	req.MemberID = cl.memberID
	req.Generation = cl.gen
	req.InstanceID = cl.instance
	if req.Version >= 5 {
		req.ProtocolType, req.Protocol = &cl.ptype, cl.protocol
	}
	if cl.leader {
		for i, m := range cl.members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = m, []byte(fmt.Sprintf("p%d", i))
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
	}
	id, now := s.id(cl), s.now
	s.do(func(c *Coordinator) string { c.SyncGroup(now, id, req); return "" })
}

func (s *sim) heartbeat(cl *simClient, memberID string, gen int32) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = int16(s.rng.Intn(5))
	req.Group = cl.group
	req.MemberID = memberID
	req.Generation = gen
	if req.Version >= 3 {
		req.InstanceID = cl.instance
	}
	id, now := s.id(cl), s.now
	s.do(func(c *Coordinator) string { c.Heartbeat(now, id, req); return "" })
}

func (s *sim) leave(cl *simClient) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = int16(s.rng.Intn(6))
	req.Group = cl.group
	if req.Version < 3 {
		req.MemberID = cl.memberID
	} else {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID, m.InstanceID = cl.memberID, cl.instance
		req.Members = append(req.Members, m)
	}
	id, now := s.id(cl), s.now
	s.do(func(c *Coordinator) string { c.LeaveGroup(now, id, req); return "" })
}

func (s *sim) commit(group string, gen int32, memberID string, instance *string, txn bool) {
	now := s.now
	s.do(func(c *Coordinator) string {
		check := c.CheckCommit
		if txn {
			check = c.CheckTxnCommit
		}
		code := check(now, group, gen, memberID, instance)
		return fmt.Sprintf("commit %s %d %s %v: %d", group, gen, memberID, txn, code)
	})
}

// zombie sends as an old incarnation: a member id from the past, perhaps
// of another client, with a generation near the current one. Its replies
// go to nobody.
func (s *sim) zombie(cl *simClient) {
	if len(s.usedIDs) == 0 {
		return
	}
	memberID := s.usedIDs[s.rng.Intn(len(s.usedIDs))]
	gen := cl.gen - int32(s.rng.Intn(2))
	if s.rng.Intn(2) == 0 {
		s.commit(cl.group, gen, memberID, nil, false)
		return
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group = cl.group
	req.MemberID = memberID
	req.Generation = gen
	req.InstanceID = cl.instance
	id, now := s.id(nil), s.now
	s.do(func(c *Coordinator) string { c.Heartbeat(now, id, req); return "" })
}

func (s *sim) admin() {
	known := func(g string) bool { return g != "g1" }
	now := s.now
	switch s.rng.Intn(4) {
	case 0:
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = int16(s.rng.Intn(7))
		req.Groups = append([]string{"nope"}, s.groups...)
		req.IncludeAuthorizedOperations = req.Version >= 3
		id := s.id(nil)
		s.do(func(c *Coordinator) string { c.DescribeGroups(now, id, req, known); return "" })
	case 1:
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = int16(s.rng.Intn(6))
		if req.Version >= 4 && s.rng.Intn(2) == 0 {
			req.StatesFilter = []string{"stable", "Empty"}
		}
		id := s.id(nil)
		s.do(func(c *Coordinator) string { c.ListGroups(now, id, req, []string{"g2", "offsets"}); return "" })
	case 3: // remove a static member by its instance id, whatever it is doing
		cl := s.clients[s.rng.Intn(len(s.clients))]
		if cl.instance == nil {
			return
		}
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = cl.group
		m := kmsg.NewLeaveGroupRequestMember()
		m.InstanceID = cl.instance
		req.Members = append(req.Members, m)
		id := s.id(nil)
		s.do(func(c *Coordinator) string { c.LeaveGroup(now, id, req); return "" })
	case 2:
		g := s.groups[s.rng.Intn(len(s.groups))]
		s.do(func(c *Coordinator) string {
			c.Tick(now) // DeleteGroup takes no time: the driver ticks first
			return fmt.Sprintf("delete %s: %d", g, c.DeleteGroup(g, known(g)))
		})
	}
}
