package server

// DescribeConfigs, versions 0 to 4, for topics and this broker. Topic
// configs are Kafka's defaults overlaid with what the topic was created with;
// broker configs are the ones clients and admin tools ask about.

import (
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
)

func init() { register(new(kmsg.DescribeConfigsRequest), 0, 4, handleDescribeConfigs) }

// topicConfigDefaults are Kafka's topic defaults that Sluice honours or
// reports.
var topicConfigDefaults = map[string]string{
	"cleanup.policy":                "delete",
	"compression.type":              "producer",
	"max.message.bytes":             strconv.Itoa(DefaultMaxMessageBytes),
	"message.timestamp.type":        "CreateTime",
	"min.insync.replicas":           "1",
	"retention.bytes":               "-1",
	"retention.ms":                  "604800000",
	"segment.bytes":                 "1073741824",
	"message.downconversion.enable": "false",
}

func (a *Agent) brokerConfigs() map[string]string {
	return map[string]string{
		"auto.create.topics.enable":        strconv.FormatBool(a.cfg.AutoCreateTopics),
		"broker.id":                        strconv.Itoa(int(a.cfg.NodeID)),
		"default.replication.factor":       "1",
		"log.retention.hours":              "168",
		"message.max.bytes":                strconv.Itoa(int(a.cfg.MaxMessageBytes)),
		"min.insync.replicas":              "1",
		"num.partitions":                   strconv.Itoa(int(a.cfg.DefaultPartitions)),
		"offsets.topic.replication.factor": "1",
		"socket.request.max.bytes":         strconv.Itoa(int(a.cfg.MaxRequestBytes)),
	}
}

func handleDescribeConfigs(a *Agent, c *call) {
	req := c.req.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	a.view(func(st *sequencer.State) {
		for _, r := range req.Resources {
			out := kmsg.NewDescribeConfigsResponseResource()
			out.ResourceType, out.ResourceName = r.ResourceType, r.ResourceName
			var values, overrides map[string]string
			switch r.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				t := st.Topics[r.ResourceName]
				if t == nil {
					out.ErrorCode = kerr.UnknownTopicOrPartition.Code
					break
				}
				values, overrides = topicConfigDefaults, t.Configs
			case kmsg.ConfigResourceTypeBroker:
				if r.ResourceName != "" && r.ResourceName != strconv.Itoa(int(a.cfg.NodeID)) {
					out.ErrorCode = kerr.InvalidRequest.Code
					break
				}
				values = a.brokerConfigs()
			default:
				out.ErrorCode = kerr.InvalidRequest.Code
			}
			if out.ErrorCode == 0 {
				out.Configs = describeConfigs(values, overrides, r.ConfigNames, r.ResourceType)
			}
			resp.Resources = append(resp.Resources, out)
		}
	})
	c.respond(resp)
}

// describeConfigs lists defaults overlaid with overrides, restricted to names
// when the client asked for some, in name order.
func describeConfigs(defaults, overrides map[string]string, names []string, kind kmsg.ConfigResourceType) []kmsg.DescribeConfigsResponseResourceConfig {
	merged := map[string]kmsg.ConfigSource{}
	value := map[string]string{}
	for k, v := range defaults {
		merged[k], value[k] = kmsg.ConfigSourceDefaultConfig, v
	}
	for k, v := range overrides {
		merged[k], value[k] = kmsg.ConfigSourceDynamicTopicConfig, v
	}
	if kind == kmsg.ConfigResourceTypeBroker {
		for k := range merged {
			merged[k] = kmsg.ConfigSourceStaticBrokerConfig
		}
	}
	keys := names
	if len(keys) == 0 {
		for k := range merged {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range keys {
		src, ok := merged[k]
		if !ok {
			continue
		}
		cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
		v := value[k]
		cfg.Name, cfg.Value, cfg.Source = k, &v, src
		cfg.IsDefault = src == kmsg.ConfigSourceDefaultConfig
		out = append(out, cfg)
	}
	return out
}
