package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const testClientID = "sluice-test"

// encodeRequest frames req the way a real client does, then strips the
// 4-byte size prefix as the connection loop would.
func encodeRequest(t testing.TB, req kmsg.Request, correlationID int32, clientID *string) []byte {
	t.Helper()
	if req.Key() == 7 && req.GetVersion() == 0 {
		// kmsg's formatter writes neither the body nor the size for
		// ControlledShutdown v0, so build its header v0 by hand.
		return req.AppendTo(rawHeader(7, 0, correlationID))
	}
	var f *kmsg.RequestFormatter
	if clientID != nil {
		f = kmsg.NewRequestFormatter(kmsg.FormatterClientID(*clientID))
	} else {
		f = kmsg.NewRequestFormatter()
	}
	framed := f.AppendRequest(nil, req, correlationID)
	total, ok, err := FrameSize(framed, DefaultMaxRequestBytes)
	if !ok || err != nil || total != len(framed) {
		t.Fatalf("FrameSize of a kmsg-framed request = (%d, %v, %v), want (%d, true, nil)", total, ok, err, len(framed))
	}
	return framed[4:]
}

func metadataRequest(version int16) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(version)
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, topic)
	return req
}

func apiVersionsRequest(version int16) kmsg.Request {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(version)
	req.ClientSoftwareName = "sluice-test"
	req.ClientSoftwareVersion = "1.0.0"
	return req
}

func produceRequest(t testing.TB, version int16) kmsg.Request {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = -1
	req.TimeoutMillis = 1500
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "orders"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Partition = 3
	part.Records = testBatch(t, 3)
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	return req
}

func controlledShutdownRequest(version int16) kmsg.Request {
	req := kmsg.NewPtrControlledShutdownRequest()
	req.SetVersion(version)
	req.BrokerID = 9
	return req
}

func TestParseRequestReadsHeaderAndBodyRoundtripsThroughKmsg(t *testing.T) {
	clientID := testClientID
	tests := []struct {
		name         string
		req          kmsg.Request
		clientID     *string
		wantFlexible bool
	}{
		{"Metadata v1 uses header v1", metadataRequest(1), &clientID, false},
		{"Metadata v12 uses header v2", metadataRequest(12), &clientID, true},
		{"ApiVersions v0 uses header v1", apiVersionsRequest(0), &clientID, false},
		{"ApiVersions v3 uses header v2", apiVersionsRequest(3), &clientID, true},
		{"Produce v8 uses header v1", produceRequest(t, 8), &clientID, false},
		{"Produce v9 uses header v2", produceRequest(t, 9), &clientID, true},
		{"null client id in header v1", metadataRequest(1), nil, false},
		{"null client id in header v2", metadataRequest(12), nil, true},
		{"ControlledShutdown v0 uses header v0", controlledShutdownRequest(0), nil, false},
		{"ControlledShutdown v1 uses header v1", controlledShutdownRequest(1), &clientID, false},
		{"ControlledShutdown v3 uses header v2", controlledShutdownRequest(3), &clientID, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const correlationID = 0x0102_0304
			frame := encodeRequest(t, tt.req, correlationID, tt.clientID)
			h, body, err := ParseRequest(frame)
			if err != nil {
				t.Fatalf("ParseRequest: %v, want nil", err)
			}
			if h.APIKey != tt.req.Key() || h.APIVersion != tt.req.GetVersion() || h.CorrelationID != correlationID {
				t.Errorf("header = key %d version %d correlation %#x, want %d %d %#x",
					h.APIKey, h.APIVersion, h.CorrelationID, tt.req.Key(), tt.req.GetVersion(), correlationID)
			}
			if h.Flexible != tt.wantFlexible {
				t.Errorf("Flexible = %v, want %v", h.Flexible, tt.wantFlexible)
			}
			switch {
			case tt.clientID == nil && h.ClientID != nil:
				t.Errorf("ClientID = %q, want nil for a null client id", h.ClientID)
			case tt.clientID != nil && string(h.ClientID) != *tt.clientID:
				t.Errorf("ClientID = %q, want %q", h.ClientID, *tt.clientID)
			}

			want := tt.req.AppendTo(nil)
			if !bytes.Equal(body, want) {
				t.Fatalf("body = % x\nwant kmsg encoding % x", body, want)
			}
			got := kmsg.RequestForKey(h.APIKey)
			got.SetVersion(h.APIVersion)
			if err := got.ReadFrom(body); err != nil {
				t.Fatalf("kmsg ReadFrom(body): %v", err)
			}
			if re := got.AppendTo(nil); !bytes.Equal(re, want) {
				t.Errorf("body does not roundtrip through kmsg:\n got % x\nwant % x", re, want)
			}
		})
	}
}

// rawHeader builds a request header by hand, for cases kmsg cannot encode.
func rawHeader(key, version int16, correlationID int32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	return append(b, rest...)
}

func TestParseRequestHeaderEdgeCases(t *testing.T) {
	const (
		keyMetadata    = 3
		keyApiVersions = 18
	)
	tests := []struct {
		name         string
		frame        []byte
		wantKey      int16
		wantClientID string
		wantFlexible bool
		wantBody     []byte
	}{
		{
			name:         "unknown api key parses as header v1",
			frame:        rawHeader(999, 0, 5, 0, 2, 'i', 'd', 0xAA, 0xBB),
			wantKey:      999,
			wantClientID: "id",
			wantBody:     []byte{0xAA, 0xBB},
		},
		{
			name:     "api key just past kmsg's table parses as header v1",
			frame:    rawHeader(kmsg.MaxKey+1, 0, 5, 0, 0, 0xAA),
			wantKey:  kmsg.MaxKey + 1,
			wantBody: []byte{0xAA},
		},
		{
			name:  "negative api key parses as header v1",
			frame: rawHeader(-1, 0, 5, 0xff, 0xff, 0xAA), wantKey: -1, wantBody: []byte{0xAA},
		},
		{
			// A client newer than kmsg sends ApiVersions with header v2. The
			// caller answers UNSUPPORTED_VERSION in a v0 response without
			// reading the body, which begins with the header's tag byte.
			name:         "ApiVersions above kmsg's max parses as header v1",
			frame:        rawHeader(keyApiVersions, 127, 5, 0, 1, 'c', 0, 0xAA),
			wantKey:      keyApiVersions,
			wantClientID: "c",
			wantBody:     []byte{0, 0xAA},
		},
		{
			name:         "negative version parses as header v1",
			frame:        rawHeader(keyMetadata, -1, 5, 0, 1, 'c', 0xAA),
			wantKey:      keyMetadata,
			wantClientID: "c",
			wantBody:     []byte{0xAA},
		},
		{
			name: "tagged fields in header v2 are skipped",
			// two tags: tag 0 with 3 bytes, tag 5 with 0 bytes
			frame:        rawHeader(keyMetadata, 12, 5, 0, 1, 'c', 2, 0, 3, 1, 2, 3, 5, 0, 0xAA),
			wantKey:      keyMetadata,
			wantClientID: "c",
			wantFlexible: true,
			wantBody:     []byte{0xAA},
		},
		{
			name:         "multi-byte varint tag is skipped",
			frame:        rawHeader(keyMetadata, 12, 5, 0, 0, 1, 0x80, 0x01, 1, 9, 0xAA),
			wantKey:      keyMetadata,
			wantFlexible: true,
			wantBody:     []byte{0xAA},
		},
		{
			name:     "empty body",
			frame:    rawHeader(keyMetadata, 1, 5, 0, 0),
			wantKey:  keyMetadata,
			wantBody: []byte{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body, err := ParseRequest(tt.frame)
			if err != nil {
				t.Fatalf("ParseRequest(% x): %v, want nil", tt.frame, err)
			}
			if h.APIKey != tt.wantKey || string(h.ClientID) != tt.wantClientID || h.Flexible != tt.wantFlexible || h.CorrelationID != 5 {
				t.Errorf("header = %+v, want key %d client %q flexible %v correlation 5", h, tt.wantKey, tt.wantClientID, tt.wantFlexible)
			}
			if !bytes.Equal(body, tt.wantBody) {
				t.Errorf("body = % x, want % x", body, tt.wantBody)
			}
		})
	}
}

func TestParseRequestRejectsMalformedHeaders(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty frame", nil, ErrHeaderTruncated},
		{"frame ends in correlation id", rawHeader(3, 1, 5)[:7], ErrHeaderTruncated},
		{"frame ends before client id length", rawHeader(3, 1, 5), ErrHeaderTruncated},
		{"frame ends inside client id length", rawHeader(3, 1, 5, 0), ErrHeaderTruncated},
		{"client id longer than frame", rawHeader(3, 1, 5, 0, 5, 'a', 'b'), ErrHeaderTruncated},
		{"client id length -2", rawHeader(3, 1, 5, 0xff, 0xfe), ErrHeaderMalformed},
		{"header v2 without tag count", rawHeader(3, 12, 5, 0, 0), ErrHeaderTruncated},
		{"tag without size", rawHeader(3, 12, 5, 0, 0, 1, 0), ErrHeaderTruncated},
		{"tag longer than frame", rawHeader(3, 12, 5, 0, 0, 1, 0, 4, 1, 2), ErrHeaderTruncated},
		{"tag count claims more tags than bytes", rawHeader(3, 12, 5, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), ErrHeaderTruncated},
		{"varint above 32 bits", rawHeader(3, 12, 5, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x1f), ErrHeaderMalformed},
		{"varint overflowing 64 bits", rawHeader(3, 12, 5, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrHeaderMalformed},
		{"varint cut short", rawHeader(3, 12, 5, 0, 0, 0x80), ErrHeaderTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, body, err := ParseRequest(tt.frame)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParseRequest(% x) = %v, want %v", tt.frame, err, tt.want)
			}
			if body != nil || h.ClientID != nil {
				t.Errorf("ParseRequest returned body % x client %q with an error, want nil", body, h.ClientID)
			}
		})
	}
}

func TestParseRequestDoesNotAllocate(t *testing.T) {
	clientID := testClientID
	for _, req := range []kmsg.Request{metadataRequest(1), produceRequest(t, 9), controlledShutdownRequest(0)} {
		frame := encodeRequest(t, req, 1, &clientID)
		if allocs := testing.AllocsPerRun(100, func() { _, _, _ = ParseRequest(frame) }); allocs != 0 {
			t.Errorf("ParseRequest of key %d v%d allocates %v times per call, want 0", req.Key(), req.GetVersion(), allocs)
		}
	}
}

// responseFrame splits a frame from AppendResponse into its parts, checking
// the size prefix.
func responseFrame(t *testing.T, frame []byte) (correlationID int32, rest []byte) {
	t.Helper()
	total, ok, err := FrameSize(frame, DefaultMaxRequestBytes)
	if !ok || err != nil || total != len(frame) {
		t.Fatalf("FrameSize(response) = (%d, %v, %v), want (%d, true, nil)", total, ok, err, len(frame))
	}
	return int32(binary.BigEndian.Uint32(frame[4:])), frame[8:]
}

func TestAppendResponseWritesTheRightHeaderVersion(t *testing.T) {
	metadata := func(version int16) kmsg.Response {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(version)
		broker := kmsg.NewMetadataResponseBroker()
		broker.NodeID, broker.Host, broker.Port = 0, "localhost", 9092
		resp.Brokers = append(resp.Brokers, broker)
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr("orders")
		part := kmsg.NewMetadataResponseTopicPartition()
		part.Partition, part.Leader, part.Replicas, part.ISR = 2, 0, []int32{0}, []int32{0}
		topic.Partitions = append(topic.Partitions, part)
		resp.Topics = append(resp.Topics, topic)
		return resp
	}
	apiVersions := func(version int16) kmsg.Response {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(version)
		key := kmsg.NewApiVersionsResponseApiKey()
		key.ApiKey, key.MinVersion, key.MaxVersion = 18, 0, 4
		resp.ApiKeys = append(resp.ApiKeys, key)
		return resp
	}
	tests := []struct {
		name        string
		resp        kmsg.Response
		wantTagByte bool
	}{
		{"Metadata v1 uses header v0", metadata(1), false},
		{"Metadata v12 uses header v1", metadata(12), true},
		{"ApiVersions v0 uses header v0", apiVersions(0), false},
		{"ApiVersions v3 still uses header v0", apiVersions(3), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("earlier response")
			const correlationID = -7
			out := AppendResponse(bytes.Clone(prefix), correlationID, tt.resp)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatalf("AppendResponse overwrote the bytes already in dst")
			}
			gotCorrelation, rest := responseFrame(t, out[len(prefix):])
			if gotCorrelation != correlationID {
				t.Errorf("correlation id = %d, want %d", gotCorrelation, correlationID)
			}
			body := tt.resp.AppendTo(nil)
			wantRest := body
			if tt.wantTagByte {
				wantRest = append([]byte{0}, body...)
			}
			if !bytes.Equal(rest, wantRest) {
				t.Fatalf("after the correlation id got % x\nwant % x", rest, wantRest)
			}
			if tt.wantTagByte {
				rest = rest[1:]
			}
			decoded := kmsg.ResponseForKey(tt.resp.Key())
			decoded.SetVersion(tt.resp.GetVersion())
			if err := decoded.ReadFrom(rest); err != nil {
				t.Fatalf("kmsg ReadFrom(response body): %v", err)
			}
			if re := decoded.AppendTo(nil); !bytes.Equal(re, body) {
				t.Errorf("response body does not roundtrip through kmsg")
			}
		})
	}
}
