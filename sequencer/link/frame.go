// Package link is the network between agents (and standby sequencers) and
// the active sequencer: a small framed protocol over TCP.
//
// A connection carries requests and replies both ways, matched by id, and,
// once the peer subscribes, the push stream: a copy of the durable state,
// then every durable entry in order, and a heartbeat with the durable index
// every HeartbeatEvery. Frames are written in batches: whatever is queued
// when the writer wakes goes out in one write.
//
// Every frame is
//
//	length uint32 (of what follows) | kind uint8 | payload
//
// with big-endian integers. The payloads:
//
//	subscribe   (empty)
//	state       state JSON (sequencer.State.Marshal)
//	update      index uint64 | entry bytes (sequencer.MarshalEntry)
//	heartbeat   durable index uint64
//	not active  (empty): the peer is not the active sequencer
//	request     id uint64 | body
//	reply       id uint64 | body
//
// A body is a type byte and its encoding: JSON for Sluice's own request and
// reply structs, and the Kafka wire encoding (key, version, bytes, by kmsg)
// for the consumer-group requests and responses the agents forward.
package link

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedb/sluice/sequencer"
	"github.com/sluicedb/sluice/sequencer/group"
)

// Kind is a frame's type.
type Kind uint8

const (
	KindSubscribe Kind = 1 + iota
	KindState
	KindUpdate
	KindHeartbeat
	KindNotActive
	KindRequest
	KindReply
)

// FrameMax bounds a frame. A state copy is the largest frame; it grows with
// the partition index.
const FrameMax = 1 << 30

// Frame is one decoded frame. Only the fields of its Kind are set.
type Frame struct {
	Kind  Kind
	ID    uint64 // request, reply
	Body  any    // request, reply
	Index uint64 // update: its index; heartbeat: the durable index
	Data  []byte // state: its JSON; update: the entry bytes
}

// Body type bytes. JSON bodies are listed in jsonBodies; the others carry
// Kafka messages.
const (
	bodyKafkaRequest  = 100
	bodyKafkaResponse = 101
	bodyJoinGroup     = 102
)

// jsonBodies are the bodies encoded as JSON, by type byte (their index).
var jsonBodies = []reflect.Type{
	reflect.TypeFor[*sequencer.CommitRequest](),
	reflect.TypeFor[*sequencer.CommitReply](),
	reflect.TypeFor[*sequencer.CreateTopicRequest](),
	reflect.TypeFor[*sequencer.DeleteTopicRequest](),
	reflect.TypeFor[*sequencer.CreatePartitionsRequest](),
	reflect.TypeFor[*sequencer.TopicReply](),
	reflect.TypeFor[*sequencer.InitProducerRequest](),
	reflect.TypeFor[*sequencer.InitProducerReply](),
}

// joinGroup is how a sequencer.JoinGroup's client travels.
type joinGroup struct {
	ClientID string `json:"id"`
	Host     string `json:"host"`
}

// AppendFrame appends f's encoding to b.
func AppendFrame(b []byte, f Frame) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, byte(f.Kind))
	var err error
	switch f.Kind {
	case KindSubscribe, KindNotActive:
	case KindState:
		b = append(b, f.Data...)
	case KindUpdate:
		b = binary.BigEndian.AppendUint64(b, f.Index)
		b = append(b, f.Data...)
	case KindHeartbeat:
		b = binary.BigEndian.AppendUint64(b, f.Index)
	case KindRequest, KindReply:
		b = binary.BigEndian.AppendUint64(b, f.ID)
		b, err = appendBody(b, f.Body)
	default:
		err = fmt.Errorf("link: unknown frame kind %d", f.Kind)
	}
	if err != nil {
		return b[:start], err
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

func appendBody(b []byte, body any) ([]byte, error) {
	switch v := body.(type) {
	case *sequencer.JoinGroup:
		b = append(b, bodyJoinGroup)
		meta, err := json.Marshal(joinGroup{ClientID: v.Client.ID, Host: v.Client.Host})
		if err != nil {
			return b, err
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(meta)))
		b = append(b, meta...)
		return appendKafka(b, v.Req.Key(), v.Req.GetVersion(), v.Req), nil
	case kmsg.Request:
		return appendKafka(append(b, bodyKafkaRequest), v.Key(), v.GetVersion(), v), nil
	case kmsg.Response:
		return appendKafka(append(b, bodyKafkaResponse), v.Key(), v.GetVersion(), v), nil
	}
	t := reflect.TypeOf(body)
	for i, jt := range jsonBodies {
		if t == jt {
			data, err := json.Marshal(body)
			if err != nil {
				return b, err
			}
			return append(append(b, byte(i)), data...), nil
		}
	}
	return b, fmt.Errorf("link: cannot encode a %T", body)
}

func appendKafka(b []byte, key, version int16, m interface{ AppendTo([]byte) []byte }) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	return m.AppendTo(b)
}

// ReadFrame reads one frame. Its Data does not alias r's buffer.
func ReadFrame(r *bufio.Reader) (Frame, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < 1 || n > FrameMax {
		return Frame{}, fmt.Errorf("link: frame of %d bytes", n)
	}
	// Read what arrives rather than allocating the claimed length up
	// front: a corrupt length must not cost a gigabyte.
	payload, err := io.ReadAll(io.LimitReader(r, int64(n-1)))
	if err != nil {
		return Frame{}, err
	}
	if len(payload) < int(n-1) {
		return Frame{}, io.ErrUnexpectedEOF
	}
	return DecodeFrame(Kind(hdr[4]), payload)
}

var errShort = errors.New("link: frame too short")

// DecodeFrame decodes a frame's payload.
func DecodeFrame(kind Kind, p []byte) (Frame, error) {
	f := Frame{Kind: kind}
	switch kind {
	case KindSubscribe, KindNotActive:
	case KindState:
		f.Data = p
	case KindUpdate, KindHeartbeat:
		if len(p) < 8 {
			return f, errShort
		}
		f.Index = binary.BigEndian.Uint64(p)
		if kind == KindUpdate {
			f.Data = p[8:]
		}
	case KindRequest, KindReply:
		if len(p) < 9 {
			return f, errShort
		}
		f.ID = binary.BigEndian.Uint64(p)
		var err error
		if f.Body, err = decodeBody(p[8:]); err != nil {
			return f, err
		}
	default:
		return f, fmt.Errorf("link: unknown frame kind %d", kind)
	}
	return f, nil
}

func decodeBody(p []byte) (any, error) {
	typ, p := p[0], p[1:]
	switch typ {
	case bodyJoinGroup:
		if len(p) < 4 || int(binary.BigEndian.Uint32(p)) > len(p)-4 {
			return nil, errShort
		}
		n := binary.BigEndian.Uint32(p)
		var jg joinGroup
		if err := json.Unmarshal(p[4:4+n], &jg); err != nil {
			return nil, fmt.Errorf("link: join group client: %w", err)
		}
		req, err := decodeKafka(p[4+n:], kmsg.RequestForKey)
		if err != nil {
			return nil, err
		}
		join, ok := req.(*kmsg.JoinGroupRequest)
		if !ok {
			return nil, fmt.Errorf("link: join group body holds a %T", req)
		}
		return &sequencer.JoinGroup{Client: group.Client{ID: jg.ClientID, Host: jg.Host}, Req: join}, nil
	case bodyKafkaRequest:
		return decodeKafka(p, kmsg.RequestForKey)
	case bodyKafkaResponse:
		return decodeKafka(p, kmsg.ResponseForKey)
	}
	if int(typ) >= len(jsonBodies) {
		return nil, fmt.Errorf("link: unknown body type %d", typ)
	}
	v := reflect.New(jsonBodies[typ].Elem())
	if err := json.Unmarshal(p, v.Interface()); err != nil {
		return nil, fmt.Errorf("link: %s: %w", jsonBodies[typ].Elem().Name(), err)
	}
	return v.Interface(), nil
}

// kafkaMessage is what kmsg requests and responses have in common.
type kafkaMessage interface {
	SetVersion(int16)
	ReadFrom([]byte) error
}

func decodeKafka[M kafkaMessage](p []byte, forKey func(int16) M) (M, error) {
	var zero M
	if len(p) < 4 {
		return zero, errShort
	}
	key, version := int16(binary.BigEndian.Uint16(p)), int16(binary.BigEndian.Uint16(p[2:]))
	m := forKey(key)
	if any(m) == nil {
		return zero, fmt.Errorf("link: unknown Kafka key %d", key)
	}
	m.SetVersion(version)
	if err := m.ReadFrom(p[4:]); err != nil {
		return zero, fmt.Errorf("link: Kafka key %d v%d: %w", key, version, err)
	}
	return m, nil
}
