package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec/codectest"
	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

// The end-to-end benchmarks run `sluice serve` in process on a counting mem
// store and speak raw Kafka over TCP, pipelined on one connection, so that
// nothing but the broker is measured. They are named by record size and
// partition count; each request carries one batch of about batchBytes per
// partition, as a client with a full batch per partition sends.
var (
	e2eRecordBytes = []int{100, 1 << 10, 16 << 10}
	e2ePartitions  = []int32{1, 8}
)

// batchBytes is the size a benchmark batch aims at. franz-go's batches grow
// to 1 MB under load; 16 KiB is a busy but not saturated partition.
const batchBytes = 16 << 10

// e2eFlushWindow is short, so that an iteration costs little, but long
// enough for the pipelined requests to share objects.
const e2eFlushWindow = 5 * time.Millisecond

// benchBatch is a batch of about batchBytes of records of recordBytes.
func benchBatch(recordBytes int) (batch []byte, records int) {
	records = max(batchBytes/recordBytes, 1)
	return codectest.Batch(codectest.BatchSpec{Records: records, ValueBytes: recordBytes}), records
}

// BenchmarkProduceE2E: one iteration is one Produce request (acks=all) of
// one batch to each partition, through the whole write path: framing, batch
// validation, flush window, data object PUT, sequencer commit and log PUT,
// response. p99-ms is the request's latency with pipelineDepth in flight;
// PUTs/s counts data and log objects together.
func BenchmarkProduceE2E(b *testing.B) {
	for _, recordBytes := range e2eRecordBytes {
		for _, parts := range e2ePartitions {
			b.Run(fmt.Sprintf("record=%s/partitions=%d", sizeName(recordBytes), parts), func(b *testing.B) {
				store := &objectio.Counting{Inner: objectio.NewMem()}
				sa := startBrokerOn(b, store, server.Config{FlushWindow: e2eFlushWindow, AutoCreateTopics: true, DefaultPartitions: parts})
				batch, records := benchBatch(recordBytes)
				frame := produceFrameParts("produce", batch, parts)
				checkProduceResponse(b, sa.Addr(), frame) // creates the topic, checks the path

				var hist Histogram
				putsBefore := store.Puts.Load()
				b.SetBytes(int64(len(batch)) * int64(parts))
				b.ReportAllocs()
				b.ResetTimer()
				pipelineTimed(b, sa.Addr(), [][]byte{frame}, b.N, &hist)
				b.StopTimer()
				secs := b.Elapsed().Seconds()
				b.ReportMetric(float64(store.Puts.Load()-putsBefore)/secs, "PUTs/s")
				b.ReportMetric(float64(hist.Quantile(0.99).Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(records)*float64(parts)*float64(b.N)/secs, "records/s")

				// Every acknowledged batch must be there: the warm-up one and b.N more.
				for p, end := range endOffsets(b, sa.Addr(), "produce") {
					if want := int64(b.N+1) * int64(records); end != want {
						b.Fatalf("partition %d ends at offset %d after %d requests of %d records, want %d", p, end, b.N+1, records, want)
					}
				}
			})
		}
	}
}

// fetchDataBytes is how much a fetch benchmark produces before fetching,
// over all partitions.
const fetchDataBytes = 8 << 20

// fetchRequestBytes is what one fetch asks for, over all partitions.
const fetchRequestBytes = 1 << 20

// BenchmarkFetchE2E: one iteration is one Fetch request for every
// partition (MaxWait 0, fetchRequestBytes in all), through the read path:
// index lookup, segment cache, response encoding and write.
//
// With cache=warm the batches are in the cache (written through by the
// producer) and every fetch reads the same offsets. With cache=cold a
// fresh broker on the same store, with the smallest cache, reads the
// whole data set round robin, so most batches come from the store:
// GETs/s shows how many.
func BenchmarkFetchE2E(b *testing.B) {
	for _, cacheState := range []string{"warm", "cold"} {
		for _, recordBytes := range e2eRecordBytes {
			for _, parts := range e2ePartitions {
				name := fmt.Sprintf("cache=%s/record=%s/partitions=%d", cacheState, sizeName(recordBytes), parts)
				b.Run(name, func(b *testing.B) { benchFetch(b, cacheState == "cold", recordBytes, parts) })
			}
		}
	}
}

func benchFetch(b *testing.B, cold bool, recordBytes int, parts int32) {
	store := &objectio.Counting{Inner: objectio.NewMem()}
	cfg := server.Config{FlushWindow: e2eFlushWindow, AutoCreateTopics: true, DefaultPartitions: parts}
	// A cold run reads through a second broker; this one is closed first.
	sa := startBrokerUnmanaged(b, store, cfg)
	if !cold {
		b.Cleanup(func() { closeBroker(sa) })
	}
	batch, records := benchBatch(recordBytes)
	frame := produceFrameParts("fetch", batch, parts)
	checkProduceResponse(b, sa.Addr(), frame)
	requests := fetchDataBytes / (len(batch) * int(parts))
	pipeline(b, sa.Addr(), [][]byte{frame}, requests)
	batchesPerPartition := int64(requests + 1)

	// The fetches: one at offset 0 when warm; when cold, one per
	// fetchRequestBytes of the data set, read in turn.
	perPartition := int64(fetchRequestBytes) / int64(parts)
	starts := []int64{0}
	if cold {
		closeBroker(sa)
		cfg.CacheBytes = 1 // the cache's minimum, 1 MiB
		sa = startBrokerOn(b, store, cfg)
		starts = starts[:0]
		batchesPerFetch := max(perPartition/int64(len(batch)), 1)
		for first := int64(0); first < batchesPerPartition; first += batchesPerFetch {
			starts = append(starts, first*int64(records))
		}
	}
	frames := make([][]byte, len(starts))
	for i, offset := range starts {
		frames[i] = fetchFrame("fetch", parts, offset, int32(perPartition))
	}

	var hist Histogram
	getsBefore := store.Gets.Load()
	b.ReportAllocs()
	b.ResetTimer()
	total := pipelineTimed(b, sa.Addr(), frames, b.N, &hist)
	b.StopTimer()
	b.SetBytes(total / int64(b.N))
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(store.Gets.Load()-getsBefore)/secs, "GETs/s")
	b.ReportMetric(float64(hist.Quantile(0.99).Microseconds())/1000, "p99-ms")
	// A fetch that found nothing would be fast and prove nothing.
	if want := min(int64(fetchRequestBytes), int64(len(batch))*int64(parts)) / 2; total/int64(b.N) < want {
		b.Fatalf("fetches returned %d bytes each, want at least %d", total/int64(b.N), want)
	}
}

// fetchFrame is a Fetch v12 request for partitions 0..parts-1 of topic,
// each from offset, as a whole frame. It never waits: MaxWait 0.
func fetchFrame(topic string, parts int32, offset int64, partitionMaxBytes int32) []byte {
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 0, 1, fetchRequestBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	for p := range parts {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, partitionMaxBytes
		ft.Partitions = append(ft.Partitions, fp)
	}
	fetch.Topics = []kmsg.FetchRequestTopic{ft}
	return requestFrame(fetch, 2)
}
