package group

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The scripts in testdata/*.txt are the coordinator's specification. Each
// step is a command, a "----" line, and the output the command must produce,
// ended by a blank line; lines starting with # are commentary. Run
//
//	go test ./sequencer/group/ -run TestScripts -rewrite
//
// to write the output seen back into the scripts, then read the diff.
//
// Commands (times are offsets from the script's start; t= moves the clock
// and defaults to the previous step's time):
//
//	config delay= min-session= max-session= max-size=   (a new coordinator at time 0)
//	join LABEL t= group=g member= instance= client=c host=h v=9 session=10s rebalance=30s type=consumer protocols=range:x
//	sync LABEL t= group=g member= gen= instance= v=5 type= protocol= assign=member:bytes,...
//	heartbeat LABEL t= group=g member= gen= instance= v=4
//	leave LABEL t= group=g v=5 member= (v0-2) members=id,id@instance,@instance (v3+)
//	describe LABEL t= v=5 groups=a,b known=a,b ops=false
//	list LABEL t= v=5 states=a,b types=a,b offsets=a,b
//	commit t= group=g gen=-1 member= instance=
//	txn-commit t= group=g gen=-1 member= instance=
//	delete group=g known=false
//	has-members group=g
//	tick t=
//	deadline
//	state
//
// A request's LABEL names it in the replies. Every step prints the replies
// the coordinator produced, in order. protocols=none is an empty list.
var rewrite = flag.Bool("rewrite", false, "write the output seen into testdata/*.txt")

func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScript(t, f) })
	}
}

// step is one command of a script, or a line of commentary (cmd == "").
type step struct {
	line int
	raw  string
	cmd  string
	want string
	got  string
}

func parseScript(t *testing.T, path string) []step {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var steps []step
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "#") {
			steps = append(steps, step{line: i + 1, raw: l})
			continue
		}
		s := step{line: i + 1, cmd: l}
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command %q is not followed by ----", path, s.line, l)
		}
		var want []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		s.want = strings.Join(want, "\n")
		steps = append(steps, s)
	}
	return steps
}

func writeScript(t *testing.T, path string, steps []step) {
	var b strings.Builder
	for _, s := range steps {
		if s.cmd == "" {
			b.WriteString(s.raw + "\n")
			continue
		}
		b.WriteString(s.cmd + "\n----\n")
		if s.got != "" {
			b.WriteString(s.got + "\n")
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func runScript(t *testing.T, path string) {
	steps := parseScript(t, path)
	r := newRunner(t)
	for i := range steps {
		s := &steps[i]
		if s.cmd == "" {
			continue
		}
		r.where = fmt.Sprintf("%s:%d", path, s.line)
		s.got = r.run(s.cmd)
		if err := r.c.checkInvariants(); err != nil {
			t.Fatalf("%s: after %q: %v", r.where, s.cmd, err)
		}
		if !*rewrite && s.got != s.want {
			t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", r.where, s.cmd, s.want, s.got)
		}
	}
	if *rewrite {
		writeScript(t, path, steps)
	}
}

// runner drives a Coordinator from script commands.
type runner struct {
	t     *testing.T
	where string
	c     *Coordinator
	base  time.Time
	now   time.Time

	nextID   uint64
	labels   map[string]uint64
	names    map[uint64]string
	versions map[uint64]int16
	keys     map[uint64]int16
	replied  map[uint64]bool
}

// scriptBase is the time scripts start at.
var scriptBase = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newRunner(t *testing.T) *runner {
	return &runner{
		t: t, c: New(Config{}), base: scriptBase, now: scriptBase,
		labels: map[string]uint64{}, names: map[uint64]string{},
		versions: map[uint64]int16{}, keys: map[uint64]int16{}, replied: map[uint64]bool{},
	}
}

func (r *runner) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s: %s", r.where, fmt.Sprintf(format, args...))
}

// args are a command's key=value arguments. Every argument given must be
// used, so a typo cannot pass unnoticed.
type args struct {
	r    *runner
	kv   map[string]string
	used map[string]bool
}

func (a *args) str(key, def string) string {
	a.used[key] = true
	if v, ok := a.kv[key]; ok {
		return v
	}
	return def
}

func (a *args) has(key string) bool {
	a.used[key] = true
	_, ok := a.kv[key]
	return ok
}

func (a *args) ptr(key string) *string {
	if !a.has(key) {
		return nil
	}
	v := a.kv[key]
	return &v
}

func (a *args) int(key string, def int64) int64 {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.r.fatalf("%s=%q: %v", key, v, err)
	}
	return n
}

func (a *args) dur(key string, def time.Duration) time.Duration {
	v := a.str(key, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		a.r.fatalf("%s=%q: %v", key, v, err)
	}
	return d
}

func (a *args) list(key string) []string {
	v := a.str(key, "")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

func (a *args) done() {
	for k := range a.kv {
		if !a.used[k] {
			a.r.fatalf("unknown argument %q", k)
		}
	}
}

// requestCommands take a label.
var requestCommands = map[string]bool{
	"join": true, "sync": true, "heartbeat": true, "leave": true, "describe": true, "list": true,
}

func (r *runner) run(cmd string) string {
	fields := strings.Fields(cmd)
	name, fields := fields[0], fields[1:]
	var label string
	if requestCommands[name] {
		if len(fields) == 0 || strings.Contains(fields[0], "=") {
			r.fatalf("%s needs a label", name)
		}
		label, fields = fields[0], fields[1:]
		if _, dup := r.labels[label]; dup {
			r.fatalf("label %q is used twice", label)
		}
	}
	a := &args{r: r, kv: map[string]string{}, used: map[string]bool{}}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			r.fatalf("argument %q is not key=value", f)
		}
		a.kv[k] = v
	}
	if name == "config" {
		r.now = r.base // a new coordinator, and the clock starts again
	}
	if a.has("t") {
		now := r.base.Add(a.dur("t", 0))
		if now.Before(r.now) {
			r.fatalf("time goes back to %s", now.Sub(r.base))
		}
		r.now = now
	}
	var out []string
	id := r.request(label)
	switch name {
	case "config":
		r.c = New(Config{
			InitialRebalanceDelay: a.dur("delay", 0),
			MinSessionTimeout:     a.dur("min-session", 0),
			MaxSessionTimeout:     a.dur("max-session", 0),
			GroupMaxSize:          int(a.int("max-size", 0)),
		})
	case "join":
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(a.int("v", 9))
		req.Group = a.str("group", "g")
		req.MemberID = a.str("member", "")
		req.InstanceID = a.ptr("instance")
		req.SessionTimeoutMillis = int32(a.dur("session", 10*time.Second).Milliseconds())
		req.RebalanceTimeoutMillis = int32(a.dur("rebalance", 30*time.Second).Milliseconds())
		req.ProtocolType = a.str("type", "consumer")
		for _, p := range strings.Split(a.str("protocols", "range:x"), ",") {
			if p == "none" {
				continue
			}
			name, meta, _ := strings.Cut(p, ":")
			jp := kmsg.NewJoinGroupRequestProtocol()
			jp.Name, jp.Metadata = name, []byte(meta)
			req.Protocols = append(req.Protocols, jp)
		}
		from := Client{ID: a.str("client", "c"), Host: a.str("host", "h")}
		r.sent(id, req)
		r.c.JoinGroupFrom(r.now, id, from, req)
	case "sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = int16(a.int("v", 5))
		req.Group = a.str("group", "g")
		req.MemberID = a.str("member", "")
		req.Generation = int32(a.int("gen", 0))
		req.InstanceID = a.ptr("instance")
		req.ProtocolType = a.ptr("type")
		req.Protocol = a.ptr("protocol")
		for _, as := range a.list("assign") {
			member, bytes, _ := strings.Cut(as, ":")
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = member, []byte(bytes)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
		r.sent(id, req)
		r.c.SyncGroup(r.now, id, req)
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = int16(a.int("v", 4))
		req.Group = a.str("group", "g")
		req.MemberID = a.str("member", "")
		req.Generation = int32(a.int("gen", 0))
		req.InstanceID = a.ptr("instance")
		r.sent(id, req)
		r.c.Heartbeat(r.now, id, req)
	case "leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = int16(a.int("v", 5))
		req.Group = a.str("group", "g")
		req.MemberID = a.str("member", "")
		for _, m := range a.list("members") {
			lm := kmsg.NewLeaveGroupRequestMember()
			member, instance, static := strings.Cut(m, "@")
			lm.MemberID = member
			if static {
				lm.InstanceID = &instance
			}
			req.Members = append(req.Members, lm)
		}
		r.sent(id, req)
		r.c.LeaveGroup(r.now, id, req)
	case "describe":
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version = int16(a.int("v", 5))
		req.Groups = a.list("groups")
		req.IncludeAuthorizedOperations = a.str("ops", "false") == "true"
		known := a.list("known")
		r.sent(id, req)
		r.c.DescribeGroups(r.now, id, req, func(g string) bool { return contains(known, g) })
	case "list":
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = int16(a.int("v", 5))
		req.StatesFilter = a.list("states")
		req.TypesFilter = a.list("types")
		r.sent(id, req)
		r.c.ListGroups(r.now, id, req, a.list("offsets"))
	case "commit", "txn-commit":
		check := r.c.CheckCommit
		if name == "txn-commit" {
			check = r.c.CheckTxnCommit
		}
		code := check(r.now, a.str("group", "g"), int32(a.int("gen", -1)), a.str("member", ""), a.ptr("instance"))
		out = append(out, name+": "+codeName(code))
	case "delete":
		out = append(out, "delete: "+codeName(r.c.DeleteGroup(a.str("group", "g"), a.str("known", "false") == "true")))
	case "has-members":
		out = append(out, fmt.Sprintf("has-members: %v", r.c.HasMembers(a.str("group", "g"))))
	case "tick":
		r.c.Tick(r.now)
	case "deadline":
		if at, ok := r.c.NextDeadline(); ok {
			out = append(out, "deadline: "+at.Sub(r.base).String())
		} else {
			out = append(out, "deadline: none")
		}
	case "state":
		out = append(out, r.state()...)
	default:
		r.fatalf("unknown command %q", name)
	}
	a.done()
	for _, rep := range r.c.Replies() {
		out = append(out, r.formatReply(rep)...)
	}
	return strings.Join(out, "\n")
}

// request gives a label its request id.
func (r *runner) request(label string) uint64 {
	if label == "" {
		return 0
	}
	r.nextID++
	r.labels[label] = r.nextID
	r.names[r.nextID] = label
	return r.nextID
}

func (r *runner) sent(id uint64, req kmsg.Request) {
	r.versions[id] = req.GetVersion()
	r.keys[id] = req.Key()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func codeName(code int16) string {
	if code == 0 {
		return "OK"
	}
	return kerr.TypedErrorForCode(code).Message
}

// formatReply checks a reply's envelope (the request it answers, once, in
// its version, encodable) and prints it.
func (r *runner) formatReply(rep Reply) []string {
	label, ok := r.names[rep.ID]
	if !ok {
		r.fatalf("reply to unknown request id %d", rep.ID)
	}
	if r.replied[rep.ID] {
		r.fatalf("request %s answered twice", label)
	}
	r.replied[rep.ID] = true
	if k := rep.Resp.Key(); k != r.keys[rep.ID] {
		r.fatalf("request %s (key %d) answered with key %d", label, r.keys[rep.ID], k)
	}
	if v := rep.Resp.GetVersion(); v != r.versions[rep.ID] {
		r.fatalf("request %s (v%d) answered in v%d", label, r.versions[rep.ID], v)
	}
	checkRoundTrip(r.t, rep.Resp)
	switch resp := rep.Resp.(type) {
	case *kmsg.JoinGroupResponse:
		return []string{label + " join: " + r.formatJoin(resp)}
	case *kmsg.SyncGroupResponse:
		return []string{label + " sync: " + r.formatSync(resp)}
	case *kmsg.HeartbeatResponse:
		return []string{label + " heartbeat: " + codeName(resp.ErrorCode)}
	case *kmsg.LeaveGroupResponse:
		s := label + " leave: " + codeName(resp.ErrorCode)
		for _, m := range resp.Members {
			s += " " + m.MemberID
			if m.InstanceID != nil {
				s += "@" + *m.InstanceID
			}
			s += ":" + codeName(m.ErrorCode)
		}
		return []string{s}
	case *kmsg.DescribeGroupsResponse:
		return append([]string{label + " describe:"}, formatDescribe(resp)...)
	case *kmsg.ListGroupsResponse:
		out := []string{label + " list: " + codeName(resp.ErrorCode)}
		for _, g := range resp.Groups {
			out = append(out, fmt.Sprintf("  %s %s %s %s", g.Group, g.GroupState, g.ProtocolType, g.GroupType))
		}
		return out
	}
	r.fatalf("unexpected response %T", rep.Resp)
	return nil
}

// checkRoundTrip encodes resp in its version and decodes it again.
func checkRoundTrip(t *testing.T, resp kmsg.Response) {
	t.Helper()
	fresh := kmsg.ResponseForKey(resp.Key())
	fresh.SetVersion(resp.GetVersion())
	if err := fresh.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("%T v%d does not round-trip: %v", resp, resp.GetVersion(), err)
	}
}

func (r *runner) formatJoin(resp *kmsg.JoinGroupResponse) string {
	if resp.ErrorCode != 0 {
		if resp.Generation != -1 || resp.LeaderID != "" || resp.Protocol != nil || resp.ProtocolType != nil || len(resp.Members) > 0 {
			r.fatalf("JoinGroup error response carries a generation: %+v", resp)
		}
		s := codeName(resp.ErrorCode)
		if resp.MemberID != "" {
			s += " member=" + resp.MemberID
		}
		return s
	}
	s := fmt.Sprintf("OK gen=%d protocol=%s/%s leader=%s member=%s",
		resp.Generation, deref(resp.ProtocolType), deref(resp.Protocol), resp.LeaderID, resp.MemberID)
	if len(resp.Members) > 0 {
		var ms []string
		for _, m := range resp.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id += "@" + *m.InstanceID
			}
			ms = append(ms, id+":"+string(m.ProtocolMetadata))
		}
		s += " members=" + strings.Join(ms, ",")
	}
	if resp.SkipAssignment {
		s += " skip-assignment"
	}
	return s
}

func (r *runner) formatSync(resp *kmsg.SyncGroupResponse) string {
	if resp.ErrorCode != 0 {
		if len(resp.MemberAssignment) > 0 || resp.Protocol != nil || resp.ProtocolType != nil {
			r.fatalf("SyncGroup error response carries an assignment: %+v", resp)
		}
		return codeName(resp.ErrorCode)
	}
	return fmt.Sprintf("OK protocol=%s/%s assignment=%s", deref(resp.ProtocolType), deref(resp.Protocol), resp.MemberAssignment)
}

func formatDescribe(resp *kmsg.DescribeGroupsResponse) []string {
	var out []string
	for _, g := range resp.Groups {
		s := fmt.Sprintf("  %s %s", g.Group, g.State)
		if g.ErrorCode != 0 {
			s += " " + codeName(g.ErrorCode)
		}
		if g.ErrorMessage != nil {
			s += fmt.Sprintf(" %q", *g.ErrorMessage)
		}
		if g.ProtocolType != "" || g.Protocol != "" {
			s += " protocol=" + g.ProtocolType + "/" + g.Protocol
		}
		if g.AuthorizedOperations != math.MinInt32 {
			s += fmt.Sprintf(" ops=%d", g.AuthorizedOperations)
		}
		out = append(out, s)
		for _, m := range g.Members {
			s := "    " + m.MemberID
			if m.InstanceID != nil {
				s += "@" + *m.InstanceID
			}
			s += " client=" + m.ClientID + " host=" + m.ClientHost
			if len(m.ProtocolMetadata) > 0 || len(m.MemberAssignment) > 0 {
				s += fmt.Sprintf(" meta=%s assignment=%s", m.ProtocolMetadata, m.MemberAssignment)
			}
			out = append(out, s)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// state prints every group's internals, timers as offsets from the start.
func (r *runner) state() []string {
	c := r.c
	at := func(token uint64) string {
		for _, t := range c.timers {
			if t.token == token {
				return t.at.Sub(r.base).String()
			}
		}
		return "?"
	}
	names := make([]string, 0, len(c.groups))
	for name := range c.groups {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{"no groups"}
	}
	var out []string
	for _, name := range names {
		g := c.groups[name]
		s := fmt.Sprintf("%s: %s gen=%d", name, g.state, g.generation)
		if g.protocolType != "" || g.protocol != "" {
			s += " protocol=" + g.protocolType + "/" + g.protocol
		}
		if g.leader != "" {
			s += " leader=" + g.leader
		}
		if g.joinTimer != 0 {
			s += " join-timer=" + at(g.joinTimer)
		}
		if g.initial != nil {
			s += fmt.Sprintf(" (initial delay, %s more at most)", g.initial.remaining)
		}
		if g.syncTimer != 0 {
			s += " sync-timer=" + at(g.syncTimer)
		}
		out = append(out, s)
		for _, m := range g.sorted() {
			s := "  " + m.id
			if m.instanceID != nil {
				s += "@" + *m.instanceID
			}
			var ps []string
			for _, p := range m.protocols {
				ps = append(ps, p.name)
			}
			s += fmt.Sprintf(" protocols=%s session=%s rebalance=%s", strings.Join(ps, ","), m.session, m.rebalance)
			if m.assignment != nil {
				s += " assignment=" + string(m.assignment)
			}
			if m.timer != 0 {
				s += " expires=" + at(m.timer)
			}
			if len(m.joins) > 0 {
				s += " joining"
			}
			if len(m.syncs) > 0 {
				s += " syncing"
			}
			if g.pendingSync[m.id] {
				s += " sync-due"
			}
			if m.isNew {
				s += " new"
			}
			out = append(out, s)
		}
		pending := make([]string, 0, len(g.pending))
		for id := range g.pending {
			pending = append(pending, id)
		}
		sort.Strings(pending)
		for _, id := range pending {
			out = append(out, "  pending "+id+" expires="+at(g.pending[id]))
		}
	}
	return out
}
