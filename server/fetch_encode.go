package server

import (
	"encoding/binary"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/codec"
	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/server/core"
)

// fetchFrame encodes a Fetch response (v4 to v12) for writev: the frame is a
// list of slices in which the record batches are the cached slices
// themselves, never copied. Everything else is written into scratch,
// including each batch's first codec.ServedHeaderSize bytes, which carry
// its offset (see core.AppendServedHeader).
//
// kmsg encodes every other response; this one is by hand only because kmsg
// needs the records as one contiguous []byte. TestFetchFrameMatchesKmsg
// checks it byte for byte against kmsg's encoding at every served version.
type fetchFrame struct {
	scratch []byte
	start   int      // where the current scratch segment begins
	vec     [][]byte // finished segments and record slices, in order
	flex    bool
}

func (f *fetchFrame) int16(v int16) { f.scratch = binary.BigEndian.AppendUint16(f.scratch, uint16(v)) }
func (f *fetchFrame) int32(v int32) { f.scratch = binary.BigEndian.AppendUint32(f.scratch, uint32(v)) }
func (f *fetchFrame) int64(v int64) { f.scratch = binary.BigEndian.AppendUint64(f.scratch, uint64(v)) }

// arrayLen writes an array length: compact (n+1 as uvarint) when flexible.
func (f *fetchFrame) arrayLen(n int) {
	if f.flex {
		f.scratch = binary.AppendUvarint(f.scratch, uint64(n)+1)
	} else {
		f.int32(int32(n))
	}
}

func (f *fetchFrame) string(s string) {
	if f.flex {
		f.scratch = binary.AppendUvarint(f.scratch, uint64(len(s))+1)
	} else {
		f.int16(int16(len(s)))
	}
	f.scratch = append(f.scratch, s...)
}

func (f *fetchFrame) tags() {
	if f.flex {
		f.scratch = append(f.scratch, 0)
	}
}

// records writes a nullable-bytes length and then the batches: each one's
// served header into scratch, and the rest by reference.
func (f *fetchFrame) records(entries []sequencer.IndexEntry, batches [][]byte) {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	if f.flex {
		f.scratch = binary.AppendUvarint(f.scratch, uint64(n)+1)
	} else {
		f.int32(int32(n))
	}
	if n == 0 {
		return
	}
	for i, b := range batches {
		f.scratch = core.AppendServedHeader(f.scratch, b, entries[i])
		f.vec = append(f.vec, f.scratch[f.start:])
		f.start = len(f.scratch)
		f.vec = append(f.vec, b[codec.ServedHeaderSize:])
	}
}

// encodeFetch lays out the response for parts (in request order, grouped by
// topic as topics lists them) into scratch and returns the frame's slices,
// and scratch as used (grown, if it had to be: the caller's pool should keep
// the grown one). The first 4 bytes are the frame size.
func encodeFetch(scratch []byte, correlationID int32, version int16, topics []kmsg.FetchRequestTopic, parts []*core.PartRead) (vec [][]byte, used []byte) {
	// Size scratch and the slice list once, from what they will hold.
	batches, fixed := 0, 64
	for _, t := range topics {
		fixed += len(t.Topic) + 16
	}
	for _, pr := range parts {
		batches += len(pr.Batches)
		fixed += 64
	}
	f := &fetchFrame{
		scratch: slices.Grow(scratch[:0], fixed+batches*codec.ServedHeaderSize),
		vec:     make([][]byte, 0, 2*batches+len(parts)+1),
		flex:    version >= 12,
	}
	f.int32(0) // size, patched below
	f.int32(correlationID)
	f.tags()   // response header v1
	f.int32(0) // throttle
	if version >= 7 {
		f.int16(0) // error code
		f.int32(0) // session id: sessions are not kept
	}
	f.arrayLen(len(topics))
	i := 0
	for _, t := range topics {
		f.string(t.Topic)
		f.arrayLen(len(t.Partitions))
		for range t.Partitions {
			pr := parts[i]
			i++
			f.int32(pr.Partition)
			f.int16(pr.Err)
			hwm, logStart := pr.HWM, pr.LogStart
			if pr.Err != 0 {
				hwm, logStart = -1, -1
			}
			f.int64(hwm)
			f.int64(hwm) // last stable offset: no transactions
			if version >= 5 {
				f.int64(logStart)
			}
			f.arrayLen(-1) // aborted transactions: null
			if version >= 11 {
				f.int32(-1) // preferred read replica
			}
			f.records(pr.Entries, pr.Batches)
			f.tags()
		}
		f.tags()
	}
	f.tags()
	if f.start < len(f.scratch) {
		f.vec = append(f.vec, f.scratch[f.start:])
	}
	size := -4
	for _, b := range f.vec {
		size += len(b)
	}
	// The first segment starts at the size field, whatever reallocations
	// of scratch happened after it was cut.
	binary.BigEndian.PutUint32(f.vec[0], uint32(size))
	return f.vec, f.scratch
}
