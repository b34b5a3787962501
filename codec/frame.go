package codec

import (
	"encoding/binary"
	"errors"
)

// DefaultMaxRequestBytes is the largest request frame accepted by default,
// matching Kafka's socket.request.max.bytes.
const DefaultMaxRequestBytes = 100 << 20

// sizePrefixBytes is the length of the int32 size prefix of every Kafka frame.
const sizePrefixBytes = 4

var (
	// ErrFrameTooLarge means a frame declared a size above the limit. The
	// connection must be closed: the stream cannot be resynchronised.
	ErrFrameTooLarge = errors.New("codec: frame size exceeds limit")
	// ErrFrameNegative means a frame declared a negative size. The connection
	// must be closed.
	ErrFrameNegative = errors.New("codec: negative frame size")
)

// FrameSize inspects the start of a byte stream. It returns the total frame
// length including the 4-byte prefix and ok=true if at least 4 bytes are
// present; err if the declared size is negative or > maxBytes (the caller
// closes the connection). On error total is 0 and ok is false, so a caller
// that loops on ok never consumes a bad frame.
//
// ok=true does not mean the whole frame has arrived: the caller waits until
// len(b) >= total.
func FrameSize(b []byte, maxBytes int32) (total int, ok bool, err error) {
	if len(b) < sizePrefixBytes {
		return 0, false, nil
	}
	size := int32(binary.BigEndian.Uint32(b))
	if size < 0 {
		return 0, false, ErrFrameNegative
	}
	if size > maxBytes {
		return 0, false, ErrFrameTooLarge
	}
	return int(size) + sizePrefixBytes, true, nil
}
