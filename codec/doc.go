// Package codec owns the Kafka wire format as the broker sees it: request
// framing, request and response headers, glue to kmsg for bodies, and a
// zero-copy view over a RecordBatch header (validate, read fields, write
// the header a batch is served with).
//
// The hot paths (FrameSize, ParseRequest, ParseBatch, the Batch accessors,
// and Batch.AppendServedHeader into a buffer with room) allocate nothing. Every slice they return aliases the
// input: the caller owns the frame buffer and must keep it alive (and
// unchanged) for as long as it uses a returned ClientID, body or Batch.
package codec
