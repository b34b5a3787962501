package bench

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"sync"
)

// A load record's value carries its own proof of integrity and origin, so a
// reader can check what it got back without knowing what was sent:
//
//	[0:4)   magic "slb1"
//	[4:8)   CRC-32C of [8:len), so a flipped bit anywhere after it is caught
//	[8:16)  writer: the producing client, unique per run (runID<<16 | client)
//	[16:24) sequence: dense per writer, from 0, in Produce call order
//	[24:32) send time, Unix nanoseconds (end-to-end latency)
//	[32:)   payload: random bytes, so compression cannot shrink the load
//
// Everything is in the value, not in Kafka record headers, so that a record
// of RecordBytes is exactly RecordBytes of value on every broker.
const (
	valueMagic = "slb1"
	// HeaderBytes is the smallest value a load record can have.
	HeaderBytes = 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RecordHeader is what a load record says about itself.
type RecordHeader struct {
	Writer       uint64
	Seq          uint64
	SentUnixNano int64
}

var (
	// errForeign means the value was not written by this load generator.
	errForeign = errors.New("bench: not a load record")
	// errChecksum means the value was, but its bytes changed on the way.
	errChecksum = errors.New("bench: load record checksum mismatch")
)

// EncodeValue writes h into the first HeaderBytes of v, whose payload (the
// rest) the caller has filled, and seals it with the checksum.
func EncodeValue(v []byte, h RecordHeader) {
	if len(v) < HeaderBytes {
		panic("bench: value shorter than the load record header")
	}
	copy(v, valueMagic)
	binary.BigEndian.PutUint64(v[8:], h.Writer)
	binary.BigEndian.PutUint64(v[16:], h.Seq)
	binary.BigEndian.PutUint64(v[24:], uint64(h.SentUnixNano))
	binary.BigEndian.PutUint32(v[4:], crc32.Checksum(v[8:], castagnoli))
}

// DecodeValue reads a load record's header and checks its checksum. It
// returns errForeign for values this generator did not write and
// errChecksum for ones that were damaged.
func DecodeValue(v []byte) (RecordHeader, error) {
	if len(v) < HeaderBytes || string(v[:4]) != valueMagic {
		return RecordHeader{}, errForeign
	}
	if binary.BigEndian.Uint32(v[4:]) != crc32.Checksum(v[8:], castagnoli) {
		return RecordHeader{}, errChecksum
	}
	return RecordHeader{
		Writer:       binary.BigEndian.Uint64(v[8:]),
		Seq:          binary.BigEndian.Uint64(v[16:]),
		SentUnixNano: int64(binary.BigEndian.Uint64(v[24:])),
	}, nil
}

// payloadPoolBytes is the random pool payloads are cut from. Much larger
// than a batch (franz-go's are at most 1 MB), so the records of a batch
// rarely overlap in the pool and compression gains next to nothing.
const payloadPoolBytes = 16 << 20

// payloads hands out random windows of one shared random pool. Not safe
// for concurrent use: each producer has its own (sharing the pool).
type payloads struct {
	pool []byte
	rng  *rand.Rand
}

// poolOnce makes the pool on first use: 16 MiB of random bytes is not
// something every importer of the package should pay for.
var poolOnce = sync.OnceValue(func() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, payloadPoolBytes)
	for i := 0; i+8 <= len(pool); i += 8 {
		binary.LittleEndian.PutUint64(pool[i:], rng.Uint64())
	}
	return pool
})

func newPayloads(seed uint64) *payloads {
	return &payloads{pool: poolOnce(), rng: rand.New(rand.NewPCG(seed, 0x5e1ce))}
}

// fill copies a random window of the pool into dst.
func (p *payloads) fill(dst []byte) {
	off := p.rng.IntN(len(p.pool) - len(dst) + 1)
	copy(dst, p.pool[off:])
}
