package sequencer

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupErrorResponse answers a group request with code everywhere the
// response has an error code: what a sequencer that cannot serve it (fenced,
// or still taking over) says.
func groupErrorResponse(req kmsg.Request, code int16) (kmsg.Response, bool) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		resp.(*kmsg.JoinGroupResponse).ErrorCode = code
	case *kmsg.SyncGroupRequest:
		resp.(*kmsg.SyncGroupResponse).ErrorCode = code
	case *kmsg.HeartbeatRequest:
		resp.(*kmsg.HeartbeatResponse).ErrorCode = code
	case *kmsg.LeaveGroupRequest:
		resp.(*kmsg.LeaveGroupResponse).ErrorCode = code
	case *kmsg.ListGroupsRequest:
		resp.(*kmsg.ListGroupsResponse).ErrorCode = code
	case *kmsg.DescribeGroupsRequest:
		out := resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.DeleteGroupsRequest:
		out := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.OffsetCommitRequest:
		out := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.OffsetFetchRequest:
		out := resp.(*kmsg.OffsetFetchResponse)
		out.ErrorCode = code
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.OffsetDeleteRequest:
		resp.(*kmsg.OffsetDeleteResponse).ErrorCode = code
	default:
		return nil, false
	}
	return resp, true
}

// isGroupRequest reports whether body is a consumer-group request.
func isGroupRequest(body any) bool {
	if _, ok := body.(*JoinGroup); ok {
		return true
	}
	req, ok := body.(kmsg.Request)
	if !ok {
		return false
	}
	_, ok = groupErrorResponse(req, 0)
	return ok
}

func sortStrings(s []string) { sort.Strings(s) }
func sortInt32s(s []int32)   { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }
