package server

import (
	"sync"

	"github.com/sluicedb/sluice/sequencer"
)

// ensureTopics creates the named topics that do not exist, when create is
// set, and then calls next (from whichever goroutine finished last). Creation
// failures are not reported here: next finds the topic missing and answers
// UNKNOWN_TOPIC_OR_PARTITION as Kafka would.
func (a *Agent) ensureTopics(names []string, create bool, next func()) {
	var missing []string
	if create {
		a.view(func(st *sequencer.State) {
			seen := map[string]bool{}
			for _, n := range names {
				if st.Topics[n] == nil && !seen[n] {
					seen[n] = true
					missing = append(missing, n)
				}
			}
		})
	}
	if len(missing) == 0 {
		next()
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(missing))
	for _, n := range missing {
		submit(a, &sequencer.CreateTopicRequest{Name: n, Partitions: a.cfg.DefaultPartitions},
			func(*sequencer.TopicReply) { wg.Done() })
	}
	go func() {
		wg.Wait()
		next()
	}()
}
