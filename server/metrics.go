package server

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/sluicedb/sluice/sequencer"
)

// metrics are the agent's counters, exposed in the Prometheus text format on
// the admin address.
type metrics struct {
	producedBatches atomic.Int64
	producedBytes   atomic.Int64
	objectsWritten  atomic.Int64
	objectBytes     atomic.Int64
	objectFailures  atomic.Int64
	fetchedBytes    atomic.Int64
	storeReads      atomic.Int64
	buffersReused   atomic.Int64
	// connectionsPaused counts the times a connection stopped reading at
	// inflightMax unanswered requests.
	connectionsPaused atomic.Int64
}

// WriteMetrics writes the counters in the Prometheus text format.
func (a *Agent) WriteMetrics(w io.Writer) {
	m := &a.metrics
	for _, c := range []struct {
		name, help string
		v          int64
	}{
		{"sluice_produced_batches_total", "Batches acknowledged to producers.", m.producedBatches.Load()},
		{"sluice_produced_bytes_total", "Bytes of acknowledged batches.", m.producedBytes.Load()},
		{"sluice_objects_written_total", "Data objects written (one per flush window).", m.objectsWritten.Load()},
		{"sluice_object_bytes_total", "Bytes of data objects written.", m.objectBytes.Load()},
		{"sluice_object_write_failures_total", "Data objects whose write failed after retries.", m.objectFailures.Load()},
		{"sluice_fetched_bytes_total", "Record bytes returned to consumers.", m.fetchedBytes.Load()},
		{"sluice_store_reads_total", "Data objects read from the object store on a cache miss.", m.storeReads.Load()},
		{"sluice_flush_buffers_reused_total", "Flush buffers reused after the cache dropped their object.", m.buffersReused.Load()},
		{"sluice_connection_pauses_total", fmt.Sprintf("Times a connection stopped reading because it had %d requests unanswered.", inflightMax), m.connectionsPaused.Load()},
	} {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.name, c.help, c.name, c.name, c.v)
	}
	fmt.Fprintf(w, "# HELP sluice_cache_bytes Memory held by the segment cache's values.\n# TYPE sluice_cache_bytes gauge\nsluice_cache_bytes %d\n", a.cache.Bytes())
	var index uint64
	a.view(func(st *sequencer.State) { index = st.Index })
	fmt.Fprintf(w, "# HELP sluice_metadata_log_index The newest metadata log entry this agent has applied (each entry is one PUT).\n# TYPE sluice_metadata_log_index gauge\nsluice_metadata_log_index %d\n", index)
}
