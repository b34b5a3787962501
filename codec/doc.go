// Package codec owns the Kafka wire format as the broker sees it: request
// framing, request and response headers, glue to kmsg for bodies, and a
// zero-copy view over a RecordBatch header (validate, read fields, patch the
// base offset).
//
// The hot paths (FrameSize, ParseRequest, ParseBatch, Batch.Patch and the
// Batch accessors) allocate nothing. Every slice they return aliases the
// input: the caller owns the frame buffer and must keep it alive (and
// unchanged) for as long as it uses a returned ClientID, body or Batch.
package codec
