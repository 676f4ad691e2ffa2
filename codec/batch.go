package codec

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Compression codecs as encoded in the low 3 bits of batch attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

// Batch errors. A malformed batch in a Produce request is answered with
// CORRUPT_MESSAGE (2) or INVALID_RECORD (87) by the handler.
var (
	ErrBatchShort       = errors.New("codec: record batch truncated")
	ErrBatchMagic       = errors.New("codec: record batch magic is not 2")
	ErrBatchCRC         = errors.New("codec: record batch CRC-32C mismatch")
	ErrBatchCount       = errors.New("codec: record count does not match the batch bytes")
	ErrBatchRecord      = errors.New("codec: malformed record")
	ErrBatchCompression = errors.New("codec: unknown compression codec")
	ErrBudget           = errors.New("codec: decompressed size over the budget")
)

// Offsets of the v2 batch header fields, from the start of the batch.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21 // the CRC covers from here to the end
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57
	// BatchHeaderLen is the size of a v2 batch header, up to the records.
	BatchHeaderLen = 61
	// batchLengthMin is the smallest valid batchLength: the header after it.
	batchLengthMin = BatchHeaderLen - offLeaderEpoch
)

// castagnoli is the CRC-32C table; crc32 uses the CPU's instruction for it
// where there is one. Built once at init, read-only afterwards.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// RecordBatch is a view of one v2 record batch. Raw is the whole batch
// (base offset through the last record); Records is the record section,
// still compressed when Compression() != 0. All slices alias the input.
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

// Batch attribute bits of a transactional producer's batches.
const (
	AttrTransactional = 0x10 // the batch belongs to a transaction
	AttrControl       = 0x20 // the batch holds transaction markers (control records)
)

// IsTransactional reports the transactional attribute bit (4).
func (b *RecordBatch) IsTransactional() bool { return b.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute bit (5).
func (b *RecordBatch) IsControl() bool { return b.Attributes&AttrControl != 0 }

// LogAppendTime reports the timestamp-type attribute bit (3).
func (b *RecordBatch) LogAppendTime() bool { return b.Attributes&attrLogAppendTime != 0 }

// Timestamp is record r's timestamp (ms) as a consumer reads it: the
// first timestamp plus its delta (wrapping like Java longs), or in a
// LogAppendTime batch the batch's max timestamp, whatever its delta says.
func (b *RecordBatch) Timestamp(r *Record) int64 {
	if b.LogAppendTime() {
		return b.MaxTimestamp
	}
	return b.FirstTimestamp + r.TimestampDelta
}

// ParseBatch parses the batch at the start of src: lengths, magic 2, CRC-32C
// over attributes..end. It returns the view and the bytes consumed. It does
// not walk the records (see RecordIter). The magic is checked before the
// length, so a legacy v0/v1 message set (its magic sits at the same offset)
// gives ErrBatchMagic rather than a length error. A negative record count is
// ErrBatchCount. The compression codec is not checked here.
//
// Any goroutine; no allocation.
func ParseBatch(src []byte) (RecordBatch, int, error) {
	var b RecordBatch
	if len(src) <= offMagic {
		return b, 0, ErrBatchShort
	}
	if src[offMagic] != 2 {
		return b, 0, ErrBatchMagic
	}
	if len(src) < BatchHeaderLen {
		return b, 0, ErrBatchShort
	}
	b.BatchLength = int32(binary.BigEndian.Uint32(src[offBatchLength:]))
	if b.BatchLength < batchLengthMin || int64(b.BatchLength) > int64(len(src)-offLeaderEpoch) {
		return b, 0, ErrBatchShort
	}
	end := offLeaderEpoch + int(b.BatchLength)
	raw := src[:end:end]
	b.CRC = binary.BigEndian.Uint32(raw[offCRC:])
	if crc32.Checksum(raw[offAttributes:], castagnoli) != b.CRC {
		return b, 0, ErrBatchCRC
	}
	b.Raw = raw
	b.Magic = 2
	b.BaseOffset = int64(binary.BigEndian.Uint64(raw[offBaseOffset:]))
	b.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(raw[offLeaderEpoch:]))
	b.Attributes = int16(binary.BigEndian.Uint16(raw[offAttributes:]))
	b.LastOffsetDelta = int32(binary.BigEndian.Uint32(raw[offLastOffsetDelta:]))
	b.FirstTimestamp = int64(binary.BigEndian.Uint64(raw[offFirstTimestamp:]))
	b.MaxTimestamp = int64(binary.BigEndian.Uint64(raw[offMaxTimestamp:]))
	b.ProducerID = int64(binary.BigEndian.Uint64(raw[offProducerID:]))
	b.ProducerEpoch = int16(binary.BigEndian.Uint16(raw[offProducerEpoch:]))
	b.BaseSequence = int32(binary.BigEndian.Uint32(raw[offBaseSequence:]))
	b.NumRecords = int32(binary.BigEndian.Uint32(raw[offNumRecords:]))
	b.Records = raw[BatchHeaderLen:]
	if b.NumRecords < 0 {
		return b, 0, ErrBatchCount
	}
	return b, end, nil
}

// PatchBaseOffset rewrites the base offset of the batch at the start of
// batch in place. The base offset is outside the CRC, so this is how a store
// assigns offsets to a produced batch without re-encoding it.
//
// Any goroutine; no allocation. batch must hold at least 8 bytes.
func PatchBaseOffset(batch []byte, baseOffset int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(baseOffset))
}

// PatchPartitionLeaderEpoch rewrites the partition leader epoch of the batch
// at the start of batch in place; like the base offset it is outside the CRC.
//
// Any goroutine; no allocation. batch must hold at least 16 bytes.
func PatchPartitionLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offLeaderEpoch:], uint32(epoch))
}

// SetMaxTimestamp sets the batch's timestamp type (attributes bit 3:
// LogAppendTime when logAppendTime) and max timestamp, in Raw and in the
// view, and computes the CRC again, as a Kafka broker does to a producer's
// batch: with LogAppendTime every record of the batch reads as ts,
// whatever its own timestamp delta says.
//
// Any goroutine that owns Raw; no allocation.
func (b *RecordBatch) SetMaxTimestamp(logAppendTime bool, ts int64) {
	b.Attributes &^= attrLogAppendTime
	if logAppendTime {
		b.Attributes |= attrLogAppendTime
	}
	b.MaxTimestamp = ts
	binary.BigEndian.PutUint16(b.Raw[offAttributes:], uint16(b.Attributes))
	binary.BigEndian.PutUint64(b.Raw[offMaxTimestamp:], uint64(ts))
	b.CRC = crc32.Checksum(b.Raw[offAttributes:], castagnoli)
	binary.BigEndian.PutUint32(b.Raw[offCRC:], b.CRC)
}

// attrLogAppendTime is the timestamp-type bit of the batch attributes.
const attrLogAppendTime = 0x08

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
// numRecords, ErrBatchRecord when a record is malformed. Next validates the
// whole record, headers included, so a HeaderIter over Record().Headers
// cannot fail.
//
// An iterator is used by one goroutine at a time; it never allocates.
type RecordIter struct {
	counted
	rec Record
}

// counted is what RecordIter and HeaderIter share: the bytes left, the
// items still announced, and the error that ends the walk.
type counted struct {
	src  []byte
	left int32
	err  error
}

// countedOf walks n items in src; a negative n is bad at once.
func countedOf(src []byte, n int32, bad error) counted {
	c := counted{src: src, left: n}
	if n < 0 {
		c.err = bad
	}
	return c
}

// due reports whether one more item is to be read: false after an error,
// and at the announced end, where bytes left over are bad.
func (c *counted) due(bad error) bool {
	if c.err != nil {
		return false
	}
	if c.left == 0 {
		if len(c.src) != 0 {
			c.err = bad
		}
		return false
	}
	return true
}

// NewRecordIter returns an iterator over n records in src. No allocation.
func NewRecordIter(src []byte, n int32) RecordIter {
	return RecordIter{counted: countedOf(src, n, ErrBatchCount)}
}

// Next advances to the next record. It returns false at the end or on error.
func (it *RecordIter) Next() bool {
	if !it.due(ErrBatchCount) {
		return false
	}
	if len(it.src) == 0 {
		it.err = ErrBatchCount
		return false
	}
	length, n := readVarint32(it.src)
	if n == 0 || length < 0 || int64(length) > int64(len(it.src)-n) {
		it.err = ErrBatchRecord
		return false
	}
	end := n + int(length)
	if !parseRecord(it.src[n:end:end], &it.rec) {
		it.err = ErrBatchRecord
		return false
	}
	it.src = it.src[end:]
	it.left--
	return true
}

// Record returns the current record; valid until the next call to Next.
func (it *RecordIter) Record() *Record { return &it.rec }

// Err returns the first error met, or nil.
func (it *RecordIter) Err() error { return it.err }

// parseRecord decodes body (one record after its length varint) into r and
// reports whether the fields use exactly all of body.
func parseRecord(body []byte, r *Record) bool {
	if len(body) == 0 {
		return false
	}
	r.Attributes = int8(body[0])
	off := 1
	var n int
	if r.TimestampDelta, n = readVarint64(body[off:]); n == 0 {
		return false
	}
	off += n
	if r.OffsetDelta, n = readVarint32(body[off:]); n == 0 {
		return false
	}
	off += n
	var ok bool
	if r.Key, off, ok = readVarBytes(body, off); !ok {
		return false
	}
	if r.Value, off, ok = readVarBytes(body, off); !ok {
		return false
	}
	if r.HeaderCount, n = readVarint32(body[off:]); n == 0 || r.HeaderCount < 0 {
		return false
	}
	off += n
	r.Headers = body[off:]
	return validHeaders(r.Headers, r.HeaderCount)
}

// validHeaders reports whether src holds exactly count well-formed headers.
func validHeaders(src []byte, count int32) bool {
	if count == 0 { // most records: no iterator to set up
		return len(src) == 0
	}
	// A header takes at least 2 bytes; this also bounds the loop by the input.
	if int64(count) > int64(len(src))/2 {
		return false
	}
	h := NewHeaderIter(src, count)
	for h.Next() {
	}
	return h.err == nil
}

// readVarBytes reads a zigzag-varint-length byte string at b[off:]: nil for
// length -1, a non-nil slice of b otherwise.
func readVarBytes(b []byte, off int) ([]byte, int, bool) {
	n, used := readVarint32(b[off:])
	if used == 0 {
		return nil, off, false
	}
	off += used
	if n == -1 {
		return nil, off, true
	}
	if n < 0 || int64(n) > int64(len(b)-off) {
		return nil, off, false
	}
	end := off + int(n)
	return b[off:end:end], end, true
}

// HeaderIter walks the raw header section of a record. Err is
// ErrBatchRecord for a malformed header (null key, bad length) or when the
// bytes hold more or fewer headers than announced.
//
// An iterator is used by one goroutine at a time; it never allocates.
type HeaderIter struct {
	counted
	key []byte
	val []byte
}

// NewHeaderIter returns an iterator over n headers in src. No allocation.
func NewHeaderIter(src []byte, n int32) HeaderIter {
	return HeaderIter{counted: countedOf(src, n, ErrBatchRecord)}
}

// Next advances; Key and Value (nil when null) alias src.
func (h *HeaderIter) Next() bool {
	if !h.due(ErrBatchRecord) {
		return false
	}
	key, off, ok := readVarBytes(h.src, 0)
	if !ok || key == nil {
		h.err = ErrBatchRecord
		return false
	}
	val, off, ok := readVarBytes(h.src, off)
	if !ok {
		h.err = ErrBatchRecord
		return false
	}
	h.key, h.val = key, val
	h.src = h.src[off:]
	h.left--
	return true
}

// Key returns the current header key.
func (h *HeaderIter) Key() []byte { return h.key }

// Value returns the current header value; nil for a null value.
func (h *HeaderIter) Value() []byte { return h.val }

// Err returns the first error met, or nil.
func (h *HeaderIter) Err() error { return h.err }
