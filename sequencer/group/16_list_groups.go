package group

import (
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupType is the group type ListGroups v5+ reports (KIP-848): every group
// here runs the classic protocol.
const groupType = "classic"

// ListGroups (key 16), versions 0-5: every group with members or pending
// members, plus the groups in withOffsets (those with committed offsets),
// which are Empty unless they have members. Groups come sorted by name.
// v4+ StatesFilter and v5+ TypesFilter keep only the groups whose state or
// type they name, compared without regard to case, as Kafka does.
func (c *Coordinator) ListGroups(now time.Time, id uint64, req *kmsg.ListGroupsRequest, withOffsets []string) {
	c.advance(now)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.SetVersion(req.Version)
	states := lowerSet(req.StatesFilter)
	types := lowerSet(req.TypesFilter)
	if len(types) > 0 && !types[groupType] {
		c.reply(id, resp)
		return
	}
	for _, name := range c.listed(withOffsets) {
		st, protocolType := stateEmpty, offsetsOnlyProtocolType
		if g := c.groups[name]; g != nil {
			st, protocolType = g.state, g.protocolType
		}
		if len(states) > 0 && !states[strings.ToLower(st.String())] {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = name
		lg.ProtocolType = protocolType
		lg.GroupState = st.String()
		lg.GroupType = groupType
		resp.Groups = append(resp.Groups, lg)
	}
	c.reply(id, resp)
}

// listed returns the names of the groups in memory and of withOffsets,
// sorted and without duplicates.
func (c *Coordinator) listed(withOffsets []string) []string {
	names := make([]string, 0, len(c.groups)+len(withOffsets))
	for name := range c.groups {
		names = append(names, name)
	}
	for _, name := range withOffsets {
		if c.groups[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := names[:0]
	for i, name := range names {
		if i == 0 || name != names[i-1] {
			out = append(out, name)
		}
	}
	return out
}

func lowerSet(ss []string) map[string]bool {
	set := make(map[string]bool, len(ss))
	for _, s := range ss {
		set[strings.ToLower(s)] = true
	}
	return set
}
