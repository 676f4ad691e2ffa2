package bridge

// This file fixes the exported API of the mapping and the Iggy batch layout.
// Bodies live in iggybatch.go and mapping.go; this file goes once they exist.

import (
	"errors"

	"github.com/iggy-kafka/gateway/codec"
)

// Iggy batch layout constants (PROTOCOL.md 6.10).
const (
	BatchHeaderSize   = 256
	MessageHeaderSize = 48
)

// Mapping errors; handlers answer them with the Kafka code in parentheses.
var (
	ErrRecordTooLarge = errors.New("bridge: record too large for an iggy message") // MESSAGE_TOO_LARGE (10)
	ErrRecordInvalid  = errors.New("bridge: record cannot be mapped")              // INVALID_RECORD (87)
	ErrUnmappable     = errors.New("bridge: stored message cannot be read as a kafka record")
)

// BatchView reads the header of an Iggy batch (stored or to be sent).
// (iggybatch.go)
type BatchView struct {
	PartitionID     uint64
	BaseOffset      uint64
	BaseTimestamp   uint64 // µs, server append time
	OriginTimestamp uint64 // µs, min over messages
	Length          uint64 // 256 + message frames
	Checksum        uint64
	Count           uint32
	Messages        []byte // the message frames, aliasing the batch
}

// ParseIggyBatch checks and reads the batch header at the start of b.
// It verifies lengths, not checksums. (iggybatch.go)
func ParseIggyBatch(b []byte) (BatchView, error) { panic("unimplemented") }

// StampIggyBatch writes partition id, base offset and base timestamp into a
// batch header and recomputes the batch checksum, as the Iggy server does.
// (iggybatch.go)
func StampIggyBatch(b []byte, partition, baseOffset, baseTimestamp uint64) {
	panic("unimplemented")
}

// IggyMessage is one message frame of a batch; slices alias the batch.
type IggyMessage struct {
	Checksum        uint64
	ID              [16]byte
	OffsetDelta     uint32
	TimestampDelta  uint32
	Payload         []byte
	UserHeaders     []byte // TLV block (PROTOCOL.md 5.6)
	Offset          uint64 // base offset + delta
	OriginTimestamp uint64 // batch origin + delta, µs
	Timestamp       uint64 // batch base timestamp, µs
}

// IggyMessageIter walks the message frames of a BatchView. (iggybatch.go)
type IggyMessageIter struct {
	view BatchView
	rest []byte
	left uint32
	msg  IggyMessage
	err  error
}

// NewIggyMessageIter returns an iterator over v's messages.
func NewIggyMessageIter(v BatchView) IggyMessageIter { panic("unimplemented") }

// Next advances; false at the end or on a malformed frame (see Err).
func (it *IggyMessageIter) Next() bool { panic("unimplemented") }

// Message returns the current message; valid until Next.
func (it *IggyMessageIter) Message() *IggyMessage { return &it.msg }

// Err returns the first error met.
func (it *IggyMessageIter) Err() error { return it.err }

// ProduceStats says what EncodeKafkaRecords wrote.
type ProduceStats struct {
	Messages int
	Bytes    int
}

// EncodeKafkaRecords appends one Iggy batch to dst holding one message per
// Kafka record of rb, whose uncompressed records section is records (the
// caller decompresses). Mapping: value -> payload, key -> header kafka.key,
// header h -> kafka.h.<h>, kafka.v on every message, CreateTime ms -> origin
// timestamp µs; tombstones, empty keys and oversized headers as documented in
// docs/MAPPING.md. maxMessage caps one message's payload+headers
// (ErrRecordTooLarge). The message ids are derived deterministically from
// producer id, epoch and sequence when rb is idempotent, else zero.
// (mapping.go)
func EncodeKafkaRecords(dst []byte, rb *codec.RecordBatch, records []byte, maxMessage int) ([]byte, ProduceStats, error) {
	panic("unimplemented")
}

// FetchCursor carries state while Kafka records are built from Iggy batches.
type FetchCursor struct {
	// From is the first offset wanted; messages below it are skipped.
	From uint64
	// MaxBytes caps the bytes appended (a first batch is always allowed
	// at least one record, as KIP-74 asks).
	MaxBytes int
	// Next is set to one past the last offset appended.
	Next uint64
	// Records counts the records appended.
	Records int
}

// AppendKafkaBatch appends, to dst, one Kafka v2 record batch holding the
// messages of the Iggy batch b at offsets >= cur.From, within cur.MaxBytes.
// Messages written by a Kafka producer through the gateway read back as the
// same record; native Iggy messages read back with a null key and their own
// headers. It returns dst unchanged when nothing fits. (mapping.go)
func AppendKafkaBatch(dst []byte, b []byte, cur *FetchCursor) ([]byte, error) {
	panic("unimplemented")
}

// CountKafkaRecords reports how many records rb's records section holds
// without mapping them; used for acks=0 and metrics. (mapping.go)
func CountKafkaRecords(rb *codec.RecordBatch) int32 { return rb.NumRecords }
