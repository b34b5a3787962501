package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func joinReq(group, memberID string, instance *string, protocols ...string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group = group
	req.MemberID = memberID
	req.InstanceID = instance
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 30000
	req.ProtocolType = "consumer"
	for _, p := range protocols {
		name, meta, _ := strings.Cut(p, ":")
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = name, []byte(meta)
		req.Protocols = append(req.Protocols, jp)
	}
	return req
}

// only returns the single reply that must be waiting.
func only[T kmsg.Response](t *testing.T, c *Coordinator) T {
	t.Helper()
	rs := c.Replies()
	if len(rs) != 1 {
		t.Fatalf("got %d replies, want 1", len(rs))
	}
	r, ok := rs[0].Resp.(T)
	if !ok {
		t.Fatalf("got a %T", rs[0].Resp)
	}
	return r
}

func TestNewMemberIDGetsTheClientIDOrTheInstanceID(t *testing.T) {
	var prefixes []string
	c := New(Config{NewMemberID: func(prefix string) string {
		prefixes = append(prefixes, prefix)
		return prefix + "-x" + string(rune('0'+len(prefixes)))
	}})
	now := scriptBase
	c.JoinGroupFrom(now, 1, Client{ID: "client"}, joinReq("g", "", nil, "range:m"))
	if r := only[*kmsg.JoinGroupResponse](t, c); r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID != "client-x1" {
		t.Fatalf("dynamic join: got %s %q, want MEMBER_ID_REQUIRED client-x1", codeName(r.ErrorCode), r.MemberID)
	}
	inst := "instance"
	c.JoinGroupFrom(now, 2, Client{ID: "client"}, joinReq("h", "", &inst, "range:m"))
	if r := only[*kmsg.JoinGroupResponse](t, c); r.ErrorCode != 0 || r.MemberID != "instance-x2" {
		t.Fatalf("static join: got %s %q, want OK instance-x2", codeName(r.ErrorCode), r.MemberID)
	}
	if strings.Join(prefixes, ",") != "client,instance" {
		t.Fatalf("NewMemberID got %v, want the client id, then the instance id", prefixes)
	}
}

func TestJoinGroupWithoutAClientIDNamesMembersAsKafkaDoes(t *testing.T) {
	c := New(Config{})
	c.JoinGroup(scriptBase, 1, joinReq("g", "", nil, "range:m"))
	if r := only[*kmsg.JoinGroupResponse](t, c); r.MemberID != "-1" {
		t.Fatalf("member id %q, want %q (Kafka: client id, a dash, a unique suffix)", r.MemberID, "-1")
	}
}

func TestNewMemberIDThatRepeatsIsABug(t *testing.T) {
	c := New(Config{NewMemberID: func(string) string { return "same" }})
	c.JoinGroup(scriptBase, 1, joinReq("g", "", nil, "range:m"))
	defer func() {
		if recover() == nil {
			t.Fatal("a repeated member id was accepted")
		}
	}()
	c.JoinGroup(scriptBase, 2, joinReq("g", "", nil, "range:m"))
}

// The coordinator keeps copies of what it keeps, so a driver may reuse the
// buffers a request was decoded from as soon as the call returns.
func TestRequestBuffersMayBeReusedAfterTheCall(t *testing.T) {
	c := New(Config{})
	req := joinReq("g", "", nil, "range:meta")
	req.Version = 3
	c.JoinGroup(scriptBase, 1, req)
	only[*kmsg.JoinGroupResponse](t, c)
	copy(req.Protocols[0].Metadata, "XXXX")

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", "-1", 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = "-1", []byte("p0")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	c.SyncGroup(scriptBase, 2, sync)
	only[*kmsg.SyncGroupResponse](t, c)
	copy(sync.GroupAssignment[0].MemberAssignment, "XX")

	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Groups = []string{"g"}
	c.DescribeGroups(scriptBase, 3, d, nil)
	m := only[*kmsg.DescribeGroupsResponse](t, c).Groups[0].Members[0]
	if string(m.ProtocolMetadata) != "meta" || string(m.MemberAssignment) != "p0" {
		t.Fatalf("metadata %q and assignment %q changed with the request buffers, want meta and p0", m.ProtocolMetadata, m.MemberAssignment)
	}
}

func TestCheckFetchIgnoresMemberAndEpochOfClassicGroups(t *testing.T) {
	c := New(Config{})
	id := "nobody"
	for _, epoch := range []int32{-1, 0, 7} {
		if code := c.CheckFetch("g", &id, epoch); code != 0 {
			t.Errorf("epoch %d: got %s, want OK", epoch, codeName(code))
		}
	}
	if code := c.CheckFetch("g", nil, -1); code != 0 {
		t.Errorf("no member: got %s, want OK", codeName(code))
	}
}

func TestConfigDefaultsAreKafkas(t *testing.T) {
	c := New(Config{})
	if c.cfg.MinSessionTimeout != 6*time.Second || c.cfg.MaxSessionTimeout != 30*time.Minute || c.cfg.InitialRebalanceDelay != 0 {
		t.Fatalf("defaults %+v, want 6s, 30m and no initial delay", c.cfg)
	}
}

// A member that heartbeats for a long time leaves a stale timer entry per
// heartbeat; compaction keeps the heap within a constant factor of the
// armed timers.
func TestTimerHeapStaysBounded(t *testing.T) {
	c := New(Config{})
	req := joinReq("g", "", nil, "range:m")
	req.Version = 3
	now := scriptBase
	c.JoinGroup(now, 1, req)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", "-1", 1
	c.SyncGroup(now, 2, sync)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "-1", 1
	peak := 0
	for i := 0; i < 100000; i++ {
		now = now.Add(100 * time.Millisecond)
		c.Heartbeat(now, uint64(3+i), hb)
		peak = max(peak, len(c.timers))
	}
	for _, r := range c.Replies() {
		if hr, ok := r.Resp.(*kmsg.HeartbeatResponse); ok && hr.ErrorCode != 0 {
			t.Fatalf("heartbeat %d: %s", r.ID, codeName(hr.ErrorCode))
		}
	}
	// Entries due within the 10s session are at most 100 of them; the rest
	// must have been compacted away.
	if peak > 2*timersCompactMin {
		t.Fatalf("the timer heap grew to %d entries for one member", peak)
	}
	if at, ok := c.NextDeadline(); !ok || !at.Equal(now.Add(10*time.Second)) {
		t.Fatalf("next deadline %v, want the session's end %v", at, now.Add(10*time.Second))
	}
}

func TestTimeNeverGoesBack(t *testing.T) {
	c := New(Config{})
	req := joinReq("g", "", nil, "range:m")
	req.Version = 3
	c.JoinGroup(scriptBase.Add(time.Minute), 1, req)
	c.Replies()
	at, _ := c.NextDeadline()
	// An input stamped earlier than one already seen is taken as happening
	// at the later time: the session it restarts ends 10s after the minute.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "-1", 1
	c.Heartbeat(scriptBase, 2, hb)
	if code := only[*kmsg.HeartbeatResponse](t, c).ErrorCode; code != 0 {
		t.Fatalf("heartbeat: %s", codeName(code))
	}
	if next, _ := c.NextDeadline(); next.Before(at) {
		t.Fatalf("deadline moved back from %v to %v", at, next)
	}
}
