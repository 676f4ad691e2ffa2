package codec

// This file fixes the exported API of package codec. Bodies are filled in by
// the files named in each comment; this file is deleted once they exist.

import "errors"

// Frame errors. Each is a reason to close the connection: the Kafka protocol
// has no way to answer a frame it cannot delimit. (frame.go)
var (
	ErrFrameNegative = errors.New("codec: negative frame size")
	ErrFrameTooLarge = errors.New("codec: frame size over the limit")
	ErrFrameHTTP     = errors.New("codec: frame looks like an HTTP request; this port speaks the Kafka protocol")
	ErrFrameTLS      = errors.New("codec: frame looks like a TLS handshake; this listener is plaintext")
	ErrFrameZero     = errors.New("codec: zero-length frame")
)

// ErrHeader is returned for a request header that cannot be parsed. (header.go)
var ErrHeader = errors.New("codec: malformed request header")

// FrameSize reads the 4-byte big-endian size prefix at the start of b and
// checks it against max (exclusive of the 4 prefix bytes). It needs len(b)>=4
// and reports ok=false when fewer bytes are there. A size <=0 or >max returns
// an error; when the size is over the limit and the prefix bytes spell "HTTP"
// (or "GET ", "POST", "PUT ", "HEAD") the error is ErrFrameHTTP, and a TLS
// record start (0x16 0x03) gives ErrFrameTLS. (frame.go)
//
// Any goroutine; no allocation.
func FrameSize(b []byte, max int32) (size int32, ok bool, err error) { panic("unimplemented") }

// RequestHeader is a parsed Kafka request header (v0, v1 or v2). ClientID
// aliases the frame; it is nil for a null client id. BodyOffset is where the
// request body starts within the frame (the frame excludes the size prefix).
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      []byte
	BodyOffset    int
	// Flexible is true when the header is v2 (tagged fields follow the
	// client id); it follows Kafka's rule per key and version.
	Flexible bool
}

// ParseRequestHeader parses the header at the start of frame without
// allocating. Keys unknown to kmsg parse as header v1 (key, version,
// correlation id, client id) so the caller can still answer or close by
// correlation id. (header.go)
//
// Any goroutine; no allocation.
func ParseRequestHeader(frame []byte) (RequestHeader, error) { panic("unimplemented") }

// RequestIsFlexible reports whether key at version uses the flexible (v2)
// request header, from a table built once from kmsg. Unknown keys are false.
// (header.go)
func RequestIsFlexible(key, version int16) bool { panic("unimplemented") }

// ResponseHeaderLen is the number of bytes AppendResponseHeader writes after
// the 4-byte size: 4 (correlation id) or 5 with the empty tag buffer of a
// flexible response. ApiVersions (key 18) always uses the v0 header. (header.go)
func ResponseHeaderLen(key, version int16) int { panic("unimplemented") }

// AppendResponseHeader appends a 4-byte size placeholder, the correlation id
// and, for flexible responses other than ApiVersions, the empty tag buffer.
// The caller appends the body and then calls PatchFrameSize(buf, start).
// (header.go)
func AppendResponseHeader(dst []byte, key, version int16, correlationID int32) []byte {
	panic("unimplemented")
}

// PatchFrameSize writes len(buf)-start-4 as the big-endian size prefix at
// buf[start:start+4]. (header.go)
func PatchFrameSize(buf []byte, start int) { panic("unimplemented") }

// Compression codecs as encoded in the low 3 bits of batch attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

// Batch errors. A malformed batch in a Produce request is answered with
// CORRUPT_MESSAGE (2) or INVALID_RECORD (87) by the handler. (batch.go)
var (
	ErrBatchShort       = errors.New("codec: record batch truncated")
	ErrBatchMagic       = errors.New("codec: record batch magic is not 2")
	ErrBatchCRC         = errors.New("codec: record batch CRC-32C mismatch")
	ErrBatchCount       = errors.New("codec: record count does not match the batch bytes")
	ErrBatchRecord      = errors.New("codec: malformed record")
	ErrBatchCompression = errors.New("codec: unknown compression codec")
	ErrBudget           = errors.New("codec: decompressed size over the budget")
)

// RecordBatch is a view of one v2 record batch. Raw is the whole batch
// (base offset through the last record); Records is the record section,
// still compressed when Compression() != 0. All slices alias the input.
// (batch.go)
type RecordBatch struct {
	Raw                  []byte
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
	Records              []byte
}

// Compression returns the codec bits of the attributes.
func (b *RecordBatch) Compression() int8 { return int8(b.Attributes & 0x07) }

// IsTransactional reports the transactional attribute bit (4).
func (b *RecordBatch) IsTransactional() bool { return b.Attributes&0x10 != 0 }

// IsControl reports the control attribute bit (5).
func (b *RecordBatch) IsControl() bool { return b.Attributes&0x20 != 0 }

// LogAppendTime reports the timestamp-type attribute bit (3).
func (b *RecordBatch) LogAppendTime() bool { return b.Attributes&0x08 != 0 }

// ParseBatch parses the batch at the start of src: lengths, magic 2, CRC-32C
// over attributes..end. It returns the view and the bytes consumed. It does
// not walk the records (see Iter). (batch.go)
//
// Any goroutine; no allocation.
func ParseBatch(src []byte) (RecordBatch, int, error) { panic("unimplemented") }

// Record is one record of a batch. Key and Value are nil when null (length
// -1) and non-nil empty when empty. Headers is the raw header section
// (HeaderCount entries); iterate it with HeaderIter. All slices alias the
// records bytes.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	HeaderCount    int32
	Headers        []byte
}

// RecordIter walks the records of an uncompressed records section. Use:
//
//	it := codec.NewRecordIter(records, numRecords)
//	for it.Next() { r := it.Record() }
//	if err := it.Err(); err != nil { ... }
//
// Err is ErrBatchCount when the bytes hold more or fewer records than
// numRecords, ErrBatchRecord when a record is malformed. (batch.go)
type RecordIter struct {
	src    []byte
	left   int32
	rec    Record
	err    error
	opened bool
}

// NewRecordIter returns an iterator over n records in src. No allocation.
func NewRecordIter(src []byte, n int32) RecordIter { panic("unimplemented") }

// Next advances to the next record. It returns false at the end or on error.
func (it *RecordIter) Next() bool { panic("unimplemented") }

// Record returns the current record; valid until the next call to Next.
func (it *RecordIter) Record() *Record { return &it.rec }

// Err returns the first error met, or nil.
func (it *RecordIter) Err() error { return it.err }

// HeaderIter walks the raw header section of a record.
type HeaderIter struct {
	src  []byte
	left int32
	key  []byte
	val  []byte
	err  error
}

// NewHeaderIter returns an iterator over n headers in src.
func NewHeaderIter(src []byte, n int32) HeaderIter { panic("unimplemented") }

// Next advances; Key and Value (nil when null) alias src.
func (h *HeaderIter) Next() bool { panic("unimplemented") }

// Key returns the current header key.
func (h *HeaderIter) Key() []byte { return h.key }

// Value returns the current header value; nil for a null value.
func (h *HeaderIter) Value() []byte { return h.val }

// Err returns the first error met, or nil.
func (h *HeaderIter) Err() error { return h.err }

// Decompress appends the decompressed form of src (compressed with codec) to
// dst and returns it. It never lets dst grow by more than budget bytes: past
// that it returns ErrBudget. Snappy accepts both raw and the xerial framing
// Java clients send; LZ4 is the frame format. (compress.go)
//
// Any goroutine.
func Decompress(dst []byte, codec int8, src []byte, budget int) ([]byte, error) {
	panic("unimplemented")
}

// BatchBuilder appends one uncompressed v2 record batch to a buffer. Use:
//
//	var bb codec.BatchBuilder
//	buf = bb.Begin(buf, baseOffset, firstTimestampMs)
//	buf = bb.AppendRecord(buf, offsetDelta, timestampDelta, key, value, headerCount)
//	buf = bb.AppendHeader(buf, k, v)   // headerCount times after each record
//	buf = bb.Finish(buf)               // lengths, counts, max timestamp, CRC
//
// Producer id/epoch/sequence are written as -1, attributes 0 (CreateTime,
// no compression). The builder holds no pointers into buf. (builder.go)
type BatchBuilder struct {
	start       int
	recStart    int
	count       int32
	lastDelta   int32
	maxTsDelta  int64
	firstTs     int64
	pendingHdrs int32
}

// Begin writes the batch header placeholder.
func (bb *BatchBuilder) Begin(dst []byte, baseOffset, firstTimestamp int64) []byte {
	panic("unimplemented")
}

// AppendRecord appends a record whose headerCount headers follow through
// AppendHeader. key or value nil encode as null.
func (bb *BatchBuilder) AppendRecord(dst []byte, offsetDelta int32, timestampDelta int64, key, value []byte, headerCount int) []byte {
	panic("unimplemented")
}

// AppendHeader appends one header of the current record; value nil is null.
func (bb *BatchBuilder) AppendHeader(dst []byte, key, value []byte) []byte {
	panic("unimplemented")
}

// Finish patches the batch header and CRC and returns dst. A batch with no
// records is removed again (dst is returned as before Begin).
func (bb *BatchBuilder) Finish(dst []byte) []byte { panic("unimplemented") }

// Count returns the number of records appended since Begin.
func (bb *BatchBuilder) Count() int32 { return bb.count }
