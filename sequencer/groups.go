package sequencer

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer/group"
)

// Consumer groups. Membership (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// ListGroups, DescribeGroups) lives in memory in a group.Coordinator and is
// answered without a log entry: a restarted sequencer starts with no members
// and clients rejoin, as after a Kafka coordinator move. Committed offsets
// (OffsetCommit, OffsetDelete, DeleteGroups) go through the log, so an
// acknowledged commit survives any crash; OffsetFetch is decided in order
// with them, so it never reads a commit that is not durable.

// JoinGroup is a JoinGroup request with the client it came from, which
// the request itself does not carry (the client id is in the request
// header, the host is the connection's peer).
type JoinGroup struct {
	Client group.Client
	Req    *kmsg.JoinGroupRequest
}

// offsetMetadataMax is Kafka's offset.metadata.max.bytes.
const offsetMetadataMax = 4096

// Tick advances the sequencer's clock: group sessions expire and waiting
// joins and syncs are answered. The driver calls it at least at
// NextDeadline, and before Step so that requests see the current time.
func (s *Sequencer) Tick(now time.Time) {
	s.now = now
	if s.role != roleActive {
		return
	}
	s.probe()
	s.groups.Tick(now)
	s.collectGroupReplies()
}

// NextDeadline is when Tick next has work, if ever.
func (s *Sequencer) NextDeadline() (time.Time, bool) { return s.groups.NextDeadline() }

// collectGroupReplies moves the coordinator's replies out. They rest on no
// log entry, only on memory; Entry is the durable index for the record.
func (s *Sequencer) collectGroupReplies() {
	durable := s.state.Index
	if s.inflight != nil {
		durable--
	}
	for _, r := range s.groups.Replies() {
		s.ready.Replies = append(s.ready.Replies, Reply{ID: r.ID, Body: r.Resp, Entry: durable})
	}
}

// stepMembership handles a membership request at once, and reports whether
// body was one.
func (s *Sequencer) stepMembership(req Request) bool {
	switch r := req.Body.(type) {
	case *JoinGroup:
		s.groups.JoinGroupFrom(s.now, req.ID, r.Client, r.Req)
	case *kmsg.SyncGroupRequest:
		s.groups.SyncGroup(s.now, req.ID, r)
	case *kmsg.HeartbeatRequest:
		s.groups.Heartbeat(s.now, req.ID, r)
	case *kmsg.LeaveGroupRequest:
		s.groups.LeaveGroup(s.now, req.ID, r)
	case *kmsg.DescribeGroupsRequest:
		s.groups.DescribeGroups(s.now, req.ID, r, func(g string) bool { return s.state.Groups[g] != nil })
	case *kmsg.ListGroupsRequest:
		s.groups.ListGroups(s.now, req.ID, r, s.groupsWithOffsets())
	default:
		return false
	}
	s.collectGroupReplies()
	return true
}

func (s *Sequencer) groupsWithOffsets() []string {
	names := make([]string, 0, len(s.state.Groups))
	for g := range s.state.Groups {
		names = append(names, g)
	}
	sortStrings(names)
	return names
}

// decideOffsetCommit stores a commit's offsets. code is the membership
// verdict CheckCommit gave it when it arrived (see Step).
func (s *Sequencer) decideOffsetCommit(index uint64, req *kmsg.OffsetCommitRequest, code int16, ops []Op) (any, []Op) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	resp.SetVersion(req.Version)
	op := &OffsetCommitOp{Group: req.Group}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			switch {
			case code != 0:
			case s.state.Partition(t.Topic, p.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.Metadata != nil && len(*p.Metadata) > offsetMetadataMax:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			default:
				e := OffsetCommitEntry{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch}
				if p.Metadata != nil {
					e.Metadata = *p.Metadata
				}
				op.Offsets = append(op.Offsets, e)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(op.Offsets) > 0 {
		ops = s.apply(index, Op{OffsetCommit: op}, ops)
	}
	return resp, ops
}

func (s *Sequencer) decideOffsetFetch(req *kmsg.OffsetFetchRequest, ops []Op) (any, []Op) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.SetVersion(req.Version)
	if req.Version < 8 {
		var topics []fetchTopic
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
		for _, ft := range s.fetchOffsets(req.Group, topics, req.Topics == nil) {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = ft.topic
			for _, p := range ft.partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset, p.LeaderEpoch, &p.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, ops
	}
	for _, g := range req.Groups {
		var topics []fetchTopic
		for _, t := range g.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		for _, ft := range s.fetchOffsets(g.Group, topics, g.Topics == nil) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = ft.topic
			for _, p := range ft.partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p.partition, p.Offset, p.LeaderEpoch, &p.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, ops
}

type fetchTopic struct {
	topic      string
	partitions []int32
}

type fetchedOffset struct {
	partition int32
	CommittedOffset
}

type fetchedTopic struct {
	topic      string
	partitions []fetchedOffset
}

// fetchOffsets answers OffsetFetch for one group: the asked partitions, or
// with all set every committed one. A partition never committed has offset
// -1 and no error, as Kafka answers.
func (s *Sequencer) fetchOffsets(group string, topics []fetchTopic, all bool) []fetchedTopic {
	if all {
		topics = nil
		if g := s.state.Groups[group]; g != nil {
			names := make([]string, 0, len(g.Topics))
			for t := range g.Topics {
				names = append(names, t)
			}
			sortStrings(names)
			for _, t := range names {
				var ps []int32
				for p := range g.Topics[t] {
					ps = append(ps, p)
				}
				sortInt32s(ps)
				topics = append(topics, fetchTopic{t, ps})
			}
		}
	}
	out := make([]fetchedTopic, 0, len(topics))
	for _, t := range topics {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.partitions {
			c, ok := s.state.Committed(group, t.topic, p)
			if !ok {
				c = CommittedOffset{Offset: -1, LeaderEpoch: -1}
			}
			ft.partitions = append(ft.partitions, fetchedOffset{p, c})
		}
		out = append(out, ft)
	}
	return out
}

func (s *Sequencer) decideDeleteGroups(index uint64, req *kmsg.DeleteGroupsRequest, ops []Op) (any, []Op) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.SetVersion(req.Version)
	for _, g := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		known := s.state.Groups[g] != nil
		rg.ErrorCode = s.groups.DeleteGroup(g, known)
		if rg.ErrorCode == 0 && known {
			ops = s.apply(index, Op{DeleteGroup: &DeleteGroupOp{Group: g}}, ops)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, ops
}

// decideOffsetDelete deletes committed offsets of a group with no active
// members. Kafka also allows it for topics the active members do not
// subscribe to; Sluice refuses any delete while the group has members.
func (s *Sequencer) decideOffsetDelete(index uint64, req *kmsg.OffsetDeleteRequest, ops []Op) (any, []Op) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.SetVersion(req.Version)
	known := s.state.Groups[req.Group] != nil
	active := s.groups.HasMembers(req.Group)
	switch {
	case !known && !active:
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		var deleted []int32
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case resp.ErrorCode != 0:
			case active:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			case s.state.Partition(t.Topic, p.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				deleted = append(deleted, p.Partition)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(deleted) > 0 {
			ops = s.apply(index, Op{OffsetDelete: &OffsetDeleteOp{Group: req.Group, Topic: t.Topic, Partitions: deleted}}, ops)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, ops
}
