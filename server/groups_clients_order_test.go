package server

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka handles the requests of one connection one at a time, in order, so a
// client may pipeline a group's requests: an OffsetCommit and right behind
// it the LeaveGroup of a member that is closing, or the JoinGroup of one
// that is rejoining. The commit is decided first, as a member of the
// generation it names, and is accepted. Each case runs a one-member group
// on one raw connection, writes the commit and the next request in one
// write, and expects Kafka's answers: the commit accepted, then the leave
// or the join.
func TestGroupCommitPipelinedBeforeLeaveOrJoinIsDecidedFirst(t *testing.T) {
	sa := startBroker(t, nil, Config{GroupInitialRebalanceDelay: -1})
	const topic = "pipelined"
	createTestTopic(t, sa.Addr(), topic, 1)
	admin := newGroupAdmin(t, sa.Addr())

	for _, next := range []string{"LeaveGroup", "JoinGroup"} {
		t.Run("commit then "+next, func(t *testing.T) {
			// Several rounds, since whether the broker reorders depends
			// on how its goroutines interleave.
			const rounds = 10
			for round := range rounds {
				group := fmt.Sprintf("pipelined-%s-%d", next, round)
				c := dialRawGroup(t, sa.Addr())
				member, gen := c.joinAndSync(t, group)

				commit := kmsg.NewPtrOffsetCommitRequest()
				commit.Version = 6
				commit.Group, commit.Generation, commit.MemberID = group, gen, member
				ct := kmsg.NewOffsetCommitRequestTopic()
				ct.Topic = topic
				cp := kmsg.NewOffsetCommitRequestTopicPartition()
				cp.Partition, cp.Offset = 0, int64(round+1)
				ct.Partitions = append(ct.Partitions, cp)
				commit.Topics = append(commit.Topics, ct)

				var second kmsg.Request
				switch next {
				case "LeaveGroup":
					leave := kmsg.NewPtrLeaveGroupRequest()
					leave.Version = 2
					leave.Group, leave.MemberID = group, member
					second = leave
				case "JoinGroup":
					second = joinRequest(group, member)
				}
				resps := c.pipeline(t, commit, second)

				commitResp := resps[0].(*kmsg.OffsetCommitResponse)
				if code := commitResp.Topics[0].Partitions[0].ErrorCode; code != 0 {
					t.Fatalf("round %d: OffsetCommit of generation %d by member %s, sent before its %s on the same connection: %v, want it accepted as Kafka does",
						round, gen, member, next, kerr.ErrorForCode(code))
				}
				switch r := resps[1].(type) {
				case *kmsg.LeaveGroupResponse:
					if r.ErrorCode != 0 {
						t.Errorf("round %d: LeaveGroup after the commit: %v", round, kerr.ErrorForCode(r.ErrorCode))
					}
				case *kmsg.JoinGroupResponse:
					if r.ErrorCode != 0 || r.Generation != gen+1 {
						t.Errorf("round %d: JoinGroup after the commit: %v in generation %d, want generation %d", round, kerr.ErrorForCode(r.ErrorCode), r.Generation, gen+1)
					}
				}
				if got := fetchCommitted(t, admin, group, topic); got[0] != int64(round+1) {
					t.Errorf("round %d: group %s has committed offset %v, want %d", round, group, got, round+1)
				}
				c.conn.Close()
			}
		})
	}
}

// rawGroupConn is one connection that speaks the group protocol by hand,
// with non-flexible request versions.
type rawGroupConn struct {
	conn net.Conn
	r    *bufio.Reader
	corr int32
}

func dialRawGroup(t *testing.T, addr string) *rawGroupConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rawGroupConn{conn: conn, r: bufio.NewReader(conn)}
}

func joinRequest(group, member string) *kmsg.JoinGroupRequest {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 3 // joins at once: MEMBER_ID_REQUIRED is v4+
	join.Group, join.MemberID, join.ProtocolType = group, member, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 6000, 6000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0}
	join.Protocols = append(join.Protocols, p)
	return join
}

// joinAndSync makes this connection the only member of a new group and
// returns its member id and generation.
func (c *rawGroupConn) joinAndSync(t *testing.T, group string) (string, int32) {
	t.Helper()
	join := c.pipeline(t, joinRequest(group, ""))[0].(*kmsg.JoinGroupResponse)
	if join.ErrorCode != 0 || join.LeaderID != join.MemberID {
		t.Fatalf("join %s: %v, leader %q, member %q; want the member to lead", group, kerr.ErrorForCode(join.ErrorCode), join.LeaderID, join.MemberID)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version = 2
	sync.Group, sync.Generation, sync.MemberID = group, join.Generation, join.MemberID
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = join.MemberID, []byte{0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	if resp := c.pipeline(t, sync)[0].(*kmsg.SyncGroupResponse); resp.ErrorCode != 0 {
		t.Fatalf("sync %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
	}
	return join.MemberID, join.Generation
}

// pipeline writes every request in one write, then reads their responses
// in order.
func (c *rawGroupConn) pipeline(t *testing.T, reqs ...kmsg.Request) []kmsg.Response {
	t.Helper()
	var buf []byte
	first := c.corr
	for _, req := range reqs {
		if req.IsFlexible() {
			t.Fatalf("%s v%d is flexible; this helper writes header v1 only", kmsg.NameForKey(req.Key()), req.GetVersion())
		}
		start := len(buf)
		buf = binary.BigEndian.AppendUint32(buf, 0)
		buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
		buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
		buf = binary.BigEndian.AppendUint32(buf, uint32(c.corr))
		buf = binary.BigEndian.AppendUint16(buf, 0xffff) // null client id
		buf = req.AppendTo(buf)
		binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
		c.corr++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	c.conn.SetDeadline(deadline)
	if _, err := c.conn.Write(buf); err != nil {
		t.Fatalf("write: %v", err)
	}
	resps := make([]kmsg.Response, len(reqs))
	for i, req := range reqs {
		var size [4]byte
		if _, err := io.ReadFull(c.r, size[:]); err != nil {
			t.Fatalf("read the response to %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c.r, frame); err != nil {
			t.Fatalf("read the response to %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		if corr := int32(binary.BigEndian.Uint32(frame)); corr != first+int32(i) {
			t.Fatalf("response with correlation id %d, want %d", corr, first+int32(i))
		}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		if err := resp.ReadFrom(frame[4:]); err != nil {
			t.Fatalf("decode the response to %s: %v", kmsg.NameForKey(req.Key()), err)
		}
		resps[i] = resp
	}
	return resps
}
