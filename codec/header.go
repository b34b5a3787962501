package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is a parsed Kafka request header.
type RequestHeader struct {
	APIKey, APIVersion int16
	CorrelationID      int32
	ClientID           []byte // aliases the frame; nil if null
	Flexible           bool   // header v2 (tagged fields present)
}

var (
	// ErrHeaderTruncated means the frame ended inside the request header.
	ErrHeaderTruncated = errors.New("codec: request header truncated")
	// ErrHeaderMalformed means a request header field is impossible, such
	// as a client id length below -1 or an overlong varint.
	ErrHeaderMalformed = errors.New("codec: request header malformed")
)

const (
	keyControlledShutdown = 7  // its v0 request header has no client id
	keyAPIVersions        = 18 // its response header is always v0

	// fixedHeaderBytes covers api key, api version and correlation id.
	fixedHeaderBytes = 2 + 2 + 4
	// versionsMax bounds the versions one apiInfo bitmap can describe.
	versionsMax = 64
)

// apiInfo is what ParseRequest needs to know about one api key, taken from
// kmsg once at init so parsing a header never builds a kmsg value.
type apiInfo struct {
	known      bool
	maxVersion int16
	flexible   uint64 // bit v set: request version v uses header v2
}

var apis = buildAPIs()

func buildAPIs() (t [kmsg.MaxKey + 1]apiInfo) {
	for key := range t {
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		maxVersion := req.MaxVersion()
		if maxVersion < 0 || maxVersion >= versionsMax {
			panic(fmt.Sprintf("codec: kmsg key %d max version %d outside [0, %d)", key, maxVersion, versionsMax))
		}
		info := apiInfo{known: true, maxVersion: maxVersion}
		for v := int16(0); v <= maxVersion; v++ {
			req.SetVersion(v)
			if req.IsFlexible() {
				info.flexible |= 1 << uint(v)
			}
		}
		t[key] = info
	}
	return t
}

// requestFlexible reports whether (key, version) is a request kmsg knows, and
// whether that request uses header v2.
func requestFlexible(key, version int16) (flexible, known bool) {
	if key < 0 || int(key) >= len(apis) {
		return false, false
	}
	info := &apis[key]
	if !info.known || version < 0 || version > info.maxVersion {
		return false, false
	}
	return info.flexible&(1<<uint(version)) != 0, true
}

// ParseRequest parses a request frame WITHOUT its 4-byte length prefix.
// Header version: v0 for ControlledShutdown v0 only (no client id), v1
// (client id) for non-flexible requests, v2 (client id + tagged fields) for
// flexible ones; flexibility of a (key, version) comes from kmsg through a
// table built at init, so parsing allocates nothing.
//
// An api key kmsg does not know, or a version outside kmsg's range, is still
// parsed as header v1 so the caller can answer UNSUPPORTED_VERSION (for
// ApiVersions the caller must answer with a v0 response). For such a request
// the body may begin with header bytes the parser did not know to skip; the
// caller must not decode it.
//
// It returns the header and the body; both alias frame.
func ParseRequest(frame []byte) (RequestHeader, []byte, error) {
	if len(frame) < fixedHeaderBytes {
		return RequestHeader{}, nil, ErrHeaderTruncated
	}
	h := RequestHeader{
		APIKey:        int16(binary.BigEndian.Uint16(frame[0:])),
		APIVersion:    int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	rest := frame[fixedHeaderBytes:]
	if h.APIKey == keyControlledShutdown && h.APIVersion == 0 {
		return h, rest, nil
	}
	flexible, _ := requestFlexible(h.APIKey, h.APIVersion)

	// Even header v2 keeps the client id a classic nullable string (int16
	// length), so old brokers can read an ApiVersions request of any version.
	clientID, rest, err := readNullableString(rest)
	if err != nil {
		return RequestHeader{}, nil, err
	}
	h.ClientID = clientID
	if flexible {
		h.Flexible = true
		if rest, err = skipTaggedFields(rest); err != nil {
			return RequestHeader{}, nil, err
		}
	}
	return h, rest, nil
}

// readNullableString reads an int16-length string; length -1 is null.
func readNullableString(b []byte) (s, rest []byte, err error) {
	if len(b) < 2 {
		return nil, nil, ErrHeaderTruncated
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	switch {
	case n == -1:
		return nil, b, nil
	case n < -1:
		return nil, nil, ErrHeaderMalformed
	case n > len(b):
		return nil, nil, ErrHeaderTruncated
	}
	// The capacity is clipped so an append to ClientID cannot overwrite the body.
	return b[:n:n], b[n:], nil
}

// skipTaggedFields skips a KIP-482 tagged-field section. The request header
// defines no tags, so all of them are skipped unread.
func skipTaggedFields(b []byte) ([]byte, error) {
	count, b, err := readUvarint32(b)
	if err != nil {
		return nil, err
	}
	// Every field takes at least two bytes (tag and size), so the loop ends
	// after at most len(b)/2 rounds whatever count claims.
	for range count {
		if _, b, err = readUvarint32(b); err != nil {
			return nil, err
		}
		var size uint32
		if size, b, err = readUvarint32(b); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, ErrHeaderTruncated
		}
		b = b[size:]
	}
	return b, nil
}

// readUvarint32 reads an unsigned varint that Kafka bounds to 32 bits.
func readUvarint32(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, nil, ErrHeaderTruncated
	case n < 0 || v > math.MaxUint32:
		return 0, nil, ErrHeaderMalformed
	}
	return uint32(v), b[n:], nil
}

// AppendResponse appends a full response frame (4-byte size, correlation
// id, tagged-field byte if the response header is flexible, body encoded by
// resp.AppendTo) to dst. The response header is flexible iff the response
// is flexible, EXCEPT ApiVersions which always uses response header v0, so
// that a client that does not yet know the broker's versions can read it.
// resp must have its version set already.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, patched below
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != keyAPIVersions {
		dst = append(dst, 0) // no tagged fields
	}
	dst = resp.AppendTo(dst)
	size := len(dst) - start - sizePrefixBytes
	if size > math.MaxInt32 {
		panic(fmt.Sprintf("codec: response of %d bytes overflows the int32 size prefix", size))
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(size))
	return dst
}
