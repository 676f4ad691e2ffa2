package bridge

// The Kafka<->Iggy record mapping (docs/MAPPING.md). One Kafka record is one
// Iggy message; what Iggy's TLV headers cannot carry goes into an envelope.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unicode/utf8"

	"github.com/iggy-kafka/gateway/codec"
)

// User-header names the mapping writes (all KindString keys).
const (
	HeaderVersion  = "kafka.v"        // Uint8 1 on every gateway-written message with user headers
	HeaderKey      = "kafka.key"      // Raw: the record key
	HeaderValue    = "kafka.value"    // String "null" or "empty"
	HeaderTime     = "kafka.ts"       // String "epoch", or Int64 LE ms when clamped
	HeaderTimeType = "kafka.tstype"   // Uint8 1: the origin timestamp is the log append time (a LogAppendTime batch)
	HeaderEnvelope = "kafka.envelope" // Uint8 1: the payload is an envelope
	HeaderCodec    = "kafka.codec"    // Raw u8 codec, u32 LE records: first message of a compressed Kafka batch
	HeaderPrefix   = "kafka.h."       // + Kafka header name: Raw value
)

// MappingVersion is the value of HeaderVersion this code writes and reads.
const MappingVersion = 1

// EnvelopeVersion is the value of HeaderEnvelope for the layout in
// docs/MAPPING.md.
const EnvelopeVersion = 1

// Fixed header values, as package-level byte slices so writing them does not
// convert strings on every message.
var (
	oneByte    = []byte{1}
	valueNull  = []byte("null")
	valueEmpty = []byte("empty")
	tsEpoch    = []byte("epoch")
)

// maxOriginMs is the largest Kafka timestamp whose µs value fits in u64.
const maxOriginMs = math.MaxUint64 / 1000

// Envelope layout sizes: presence byte and three u32 lengths/counts, then a
// presence byte and two u32 lengths per header.
const (
	envFixed     = 1 + 4 + 4 + 4
	envPerHeader = 1 + 4 + 4
)

// ProduceStats says what EncodeKafkaRecords wrote.
type ProduceStats struct {
	Messages int
	Bytes    int
	// Exact: Fetch reads every record back exactly as the producer's
	// batch holds it, so that batch may be sent to consumers as it came
	// (the Fetch handler's tail cache). False when a record has a negative
	// timestamp (Fetch shows the append time instead) or an offset delta
	// other than its index (the mapping numbers records by position).
	Exact bool
	// Prepared is what a backend's AppendStaged takes on trust.
	Prepared
}

// Prepared is what the mapping knows of a batch it built, which a
// backend's AppendStaged would otherwise find by walking the frames again.
type Prepared struct {
	// Times sums up the messages' origin timestamps.
	Times BatchTimes
	// Sums is the batch checksum's input (BatchView.Sums), kept in the
	// capacity of the buffer EncodeKafkaRecords returned, just past the
	// batch; nil when the encoder did not gather it. Valid until the
	// buffer is appended to.
	Sums []byte
}

// EncodeKafkaRecords appends one Iggy batch to dst holding one message per
// Kafka record of rb, whose uncompressed records section is records (the
// caller decompresses). Mapping: value -> payload, key -> header kafka.key,
// header h -> kafka.h.<h>, kafka.v on every message that has user headers
// (a record needing none is a plain native message), CreateTime ms -> origin
// timestamp µs; tombstones, empty keys and oversized headers as documented in
// docs/MAPPING.md. maxMessage caps one message's payload+headers
// (ErrRecordTooLarge); <= 0 means Iggy's own caps only. The message ids are
// derived deterministically from producer id, epoch and sequence when rb is
// idempotent or transactional (whose ids say so), else zero. Whether a
// transactional batch may be written is the caller's decision.
//
// On error dst is returned unchanged. Errors wrap ErrRecordInvalid (a
// malformed, control or unmappable record, including a repeated header
// name; a transactional batch without a producer id) or
// ErrRecordTooLarge. Transaction markers are written by EncodeMarker only.
func EncodeKafkaRecords(dst []byte, rb *codec.RecordBatch, records []byte, maxMessage int) ([]byte, ProduceStats, error) {
	if rb.IsControl() || rb.NumRecords <= 0 || (rb.IsTransactional() && rb.ProducerID < 0) {
		return dst, ProduceStats{}, ErrRecordInvalid
	}
	start := len(dst)
	if out, exact, times, ok := encodeOnePass(dst, rb, records, maxMessage); ok {
		end := len(out)
		// The gathered checksum input rides past the batch, in the
		// buffer's capacity (encodeOnePass put it there).
		sums := out[end : end+sumsHead+8*int(rb.NumRecords)]
		return out, ProduceStats{Messages: int(rb.NumRecords), Bytes: end - start, Exact: exact && exactHeader(rb),
			Prepared: Prepared{Times: times, Sums: sums}}, nil
	}
	return encodeTwoPass(dst[:start], rb, records, maxMessage)
}

// exactHeader reports a batch whose header Fetch reproduces: attributes
// hold at most a codec, the timestamp type and the transactional bit
// (Fetch rebuilds a transactional batch with its producer id, epoch and
// base sequence; never control) and the last offset delta is the record
// count minus one. A
// LogAppendTime batch comes back with delta 0 on every record and the
// append time as its first timestamp, which no consumer reads: every
// record of it reads as its max timestamp either way.
func exactHeader(rb *codec.RecordBatch) bool {
	return rb.Attributes&^(0x0F|codec.AttrTransactional) == 0 && rb.LastOffsetDelta == rb.NumRecords-1
}

// exactRecord reports a record Fetch reads back as it is: a timestamp of
// 0 or more, the offset delta of its position i and no attributes (unused
// in v2; Fetch writes 0).
func exactRecord(rb *codec.RecordBatch, r *codec.Record, i uint32) bool {
	return recordTime(rb, r) >= 0 && r.OffsetDelta == int32(i) && r.Attributes == 0
}

// encodeOnePass encodes the usual batch, whose first record is its oldest
// (Kafka clients stamp the first record at delta 0 and later ones at or
// after it), in one walk: it validates and writes each record in turn with
// the first record's origin as the batch origin. It gives up (ok=false,
// dst[:start] returned) when a later record is older, which would move the
// origin, and on any error, so encodeTwoPass decides the result exactly
// as it always has. Produce CPU profiles over a real Iggy server had the
// second walk (scanRecords re-parsing every record) at 16 % of the
// gateway's samples.
func encodeOnePass(dst []byte, rb *codec.RecordBatch, records []byte, maxMessage int) (out []byte, exact bool, times BatchTimes, ok bool) {
	start := len(dst)
	exact = true
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	e := encoder{rb: rb, maxMessage: maxMessage}
	sp := checksumScratch.Get().(*[]byte)
	sums := append((*sp)[:0], make([]byte, sumsHead)...)
	defer func() { *sp = sums[:0]; checksumScratch.Put(sp) }()
	it := codec.NewRecordIter(records, rb.NumRecords)
	var err error
	for i := uint32(0); it.Next(); i++ {
		r := it.Record()
		origin, ok := originOf(recordTime(rb, r))
		if !ok {
			return dst[:start], false, BatchTimes{}, false
		}
		if i == 0 {
			e.minOrigin = origin
		} else if origin < e.minOrigin {
			return dst[:start], false, BatchTimes{}, false
		}
		exact = exact && exactRecord(rb, r, i)
		frame := len(dst)
		if dst, err = e.appendMessage(dst, r, i); err != nil {
			return dst[:start], false, BatchTimes{}, false
		}
		sums = append(sums, dst[frame+mfChecksum:frame+mfChecksum+8]...)
	}
	if it.Err() != nil {
		return dst[:start], false, BatchTimes{}, false
	}
	le.PutUint64(dst[start+bhOriginTs:], e.minOrigin)
	finishBatchSums(dst[start:], uint32(rb.NumRecords), sums)
	// Keep the checksum input past the batch, in dst's capacity, for the
	// store's stamping (ProduceStats.Sums).
	end := len(dst)
	dst = append(dst, sums...)[:end]
	return dst, exact, e.times(), true
}

// encodeTwoPass is EncodeKafkaRecords for any batch: a first walk validates
// every record and finds the oldest origin, a second writes the messages.
func encodeTwoPass(dst []byte, rb *codec.RecordBatch, records []byte, maxMessage int) ([]byte, ProduceStats, error) {
	minOrigin, err := scanRecords(rb, records)
	if err != nil {
		return dst, ProduceStats{}, err
	}
	e := encoder{rb: rb, minOrigin: minOrigin, maxMessage: maxMessage}
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	le.PutUint64(dst[start+bhOriginTs:], minOrigin)
	it := codec.NewRecordIter(records, rb.NumRecords)
	exact := exactHeader(rb)
	for i := uint32(0); it.Next(); i++ {
		r := it.Record()
		exact = exact && exactRecord(rb, r, i)
		if dst, err = e.appendMessage(dst, r, i); err != nil {
			return dst[:start], ProduceStats{}, err
		}
	}
	finishBatch(dst[start:], uint32(rb.NumRecords))
	return dst, ProduceStats{Messages: int(rb.NumRecords), Bytes: len(dst) - start, Exact: exact, Prepared: Prepared{Times: e.times()}}, nil
}

// CountKafkaRecords reports how many records rb's records section holds
// without mapping them; used for acks=0 and metrics.
func CountKafkaRecords(rb *codec.RecordBatch) int32 { return rb.NumRecords }

// scanRecords is the first pass: it checks every record (framing,
// timestamp in range) and returns the batch origin timestamp,
// the minimum over messages, which every frame's delta is relative to.
func scanRecords(rb *codec.RecordBatch, records []byte) (uint64, error) {
	minOrigin := uint64(math.MaxUint64)
	it := codec.NewRecordIter(records, rb.NumRecords)
	for it.Next() {
		r := it.Record()
		origin, ok := originOf(recordTime(rb, r))
		if !ok {
			return 0, fmt.Errorf("%w: timestamp out of range", ErrRecordInvalid)
		}
		minOrigin = min(minOrigin, origin)
	}
	if err := it.Err(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrRecordInvalid, err)
	}
	return minOrigin, nil
}

// recordTime is the record's timestamp in ms: its CreateTime, or in a
// LogAppendTime batch the append time the gateway stamped.
func recordTime(rb *codec.RecordBatch, r *codec.Record) int64 { return rb.Timestamp(r) }

// originOf maps a Kafka timestamp to an Iggy origin timestamp: negative
// (no timestamp) is 0, as is the epoch itself (flagged separately).
func originOf(ms int64) (uint64, bool) {
	if ms < 0 {
		return 0, true
	}
	if uint64(ms) > maxOriginMs {
		return 0, false
	}
	return uint64(ms) * 1000, true
}

// hasRepeatedHeader reports a header name used twice in one record (legal
// in Kafka): Iggy keeps user headers in a map, where the second would
// replace the first, so such a record goes into the envelope, which keeps
// its headers as a list.
func hasRepeatedHeader(r *codec.Record) bool {
	if r.HeaderCount < 2 {
		return false
	}
	if r.HeaderCount > 32 {
		return hasRepeatedHeaderMap(r)
	}
	outer := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for i := 0; outer.Next(); i++ {
		inner := codec.NewHeaderIter(r.Headers, r.HeaderCount)
		for j := 0; j < i && inner.Next(); j++ {
			if bytes.Equal(inner.Key(), outer.Key()) {
				return true
			}
		}
	}
	return false
}

// hasRepeatedHeaderMap is the linear variant for records with many
// headers, where the quadratic scan would let one record burn CPU.
func hasRepeatedHeaderMap(r *codec.Record) bool {
	seen := make(map[string]struct{}, r.HeaderCount)
	h := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for h.Next() {
		if _, dup := seen[string(h.Key())]; dup {
			return true
		}
		seen[string(h.Key())] = struct{}{}
	}
	return false
}

// encoder carries the per-batch state of the second pass.
type encoder struct {
	rb         *codec.RecordBatch
	minOrigin  uint64
	maxMessage int
	// The largest origin written, the clamp undone, and whether a delta
	// was 0: the batch's BatchTimes.
	maxOrigin uint64
	zeroDelta bool
}

// times is what the encoder wrote in brief (ProduceStats.Times).
func (e *encoder) times() BatchTimes {
	return BatchTimes{Known: true, MaxOrigin: e.maxOrigin, ZeroOrigin: e.zeroDelta && e.minOrigin == 0}
}

// recordPlan is what one record needs, worked out before writing it.
type recordPlan struct {
	ms        int64
	origin    uint64 // µs, 0 for a record without a timestamp
	tsDelta   uint32
	clamped   bool // origin further than MaxTimestampDelta from the minimum
	logAppend bool // the batch is LogAppendTime (kafka.tstype)
	envelope  bool
	bare      bool  // no user headers at all (a record docs/MAPPING.md stores as a native message)
	payload   int   // payload bytes
	headerLen int   // user-header block bytes
	codec     int8  // the batch's compression codec, on its first message only (kafka.codec)
	count     int32 // the batch's record count, with codec
}

// codecMarkLen is the kafka.codec value: u8 codec, u32 LE record count.
const codecMarkLen = 5

// appendMessage writes the frame, payload and user headers of record i.
func (e *encoder) appendMessage(dst []byte, r *codec.Record, i uint32) ([]byte, error) {
	p := e.plan(r, i)
	if p.payload > MaxPayload || p.headerLen > MaxUserHeaders {
		return dst, ErrRecordTooLarge
	}
	if e.maxMessage > 0 && p.payload+p.headerLen > e.maxMessage {
		return dst, ErrRecordTooLarge
	}
	start := len(dst)
	e.maxOrigin = max(e.maxOrigin, p.origin)
	e.zeroDelta = e.zeroDelta || p.tsDelta == 0
	var f [MessageHeaderSize]byte
	e.messageID(f[mfID:mfID+16], i)
	le.PutUint32(f[mfOffsetDelta:], i)
	le.PutUint32(f[mfTsDelta:], p.tsDelta)
	le.PutUint32(f[mfHeadersLen:], uint32(p.headerLen))
	le.PutUint32(f[mfPayloadLen:], uint32(p.payload))
	dst = append(dst, f[:]...)
	if p.envelope {
		dst = appendEnvelope(dst, r)
	} else {
		dst = appendPlainPayload(dst, r.Value)
	}
	if !p.bare {
		dst = appendMappingHeaders(dst, r, &p)
	}
	sealFrame(dst[start:])
	return dst, nil
}

// plan decides the message shape of r: its timestamp delta, whether it
// needs the envelope, and the exact payload and header sizes.
func (e *encoder) plan(r *codec.Record, i uint32) recordPlan {
	p := recordPlan{ms: recordTime(e.rb, r), logAppend: e.rb.LogAppendTime()}
	if i == 0 {
		p.codec, p.count = e.rb.Compression(), e.rb.NumRecords
	}
	p.origin, _ = originOf(p.ms) // range checked by scanRecords
	if d := p.origin - e.minOrigin; d > MaxTimestampDelta {
		p.tsDelta, p.clamped = MaxTimestampDelta, true
	} else {
		p.tsDelta = uint32(d)
	}
	fixed := entrySize(HeaderVersion, 1) + p.timeHeaderSize()
	if p.logAppend {
		fixed += len(logAppendEntry)
	}
	if p.codec != codec.CompressionNone {
		fixed += entrySize(HeaderCodec, codecMarkLen)
	}
	plain, fits := plainHeadersSize(r)
	if fits && fixed+plain <= MaxUserHeaders {
		p.payload = max(len(r.Value), 1)
		p.headerLen = fixed + plain
		if fixed+plain == entrySize(HeaderVersion, 1) {
			// Nothing but kafka.v: the record reads back the same as a
			// native message (key null, the payload as value, no headers,
			// the origin or append time), so it is stored as one.
			p.bare, p.headerLen = true, 0
		}
		return p
	}
	p.envelope = true
	p.payload = envelopeSize(r)
	p.headerLen = fixed + entrySize(HeaderEnvelope, 1)
	return p
}

// timeHeaderSize is the size of the kafka.ts entry the record needs, if any.
func (p *recordPlan) timeHeaderSize() int {
	switch {
	case p.ms == 0:
		return entrySize(HeaderTime, len(tsEpoch))
	case p.clamped:
		return entrySize(HeaderTime, 8)
	}
	return 0
}

// entrySize is the TLV size of an entry with a key of len(key) and a value
// of n bytes.
func entrySize(key string, n int) int { return tlvOverhead + len(key) + n }

// plainHeadersSize sums the key, value-marker and kafka.h.* entries of r,
// and reports false when one of them cannot be a TLV (so the record needs
// the envelope): an empty or over-long key, a header name that is over-long
// or not UTF-8 (keys are Iggy Strings), a null, empty or over-long value, a
// header name used twice.
func plainHeadersSize(r *codec.Record) (int, bool) {
	n := 0
	switch {
	case r.Key == nil:
	case len(r.Key) == 0 || len(r.Key) > MaxHeaderField:
		return 0, false
	default:
		n += entrySize(HeaderKey, len(r.Key))
	}
	if r.Value == nil {
		n += entrySize(HeaderValue, len(valueNull))
	} else if len(r.Value) == 0 {
		n += entrySize(HeaderValue, len(valueEmpty))
	}
	if r.HeaderCount == 0 { // most records: no iterator to set up
		return n, true
	}
	h := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for h.Next() {
		k, v := h.Key(), h.Value()
		if len(HeaderPrefix)+len(k) > MaxHeaderField || !utf8.Valid(k) ||
			len(v) == 0 || len(v) > MaxHeaderField {
			return 0, false
		}
		n += tlvOverhead + len(HeaderPrefix) + len(k) + len(v)
	}
	if hasRepeatedHeader(r) {
		return 0, false
	}
	return n, true
}

// appendPlainPayload writes the value, or one 0x00 byte for a null or
// empty value (Iggy messages are never empty; kafka.value says which).
func appendPlainPayload(dst, value []byte) []byte {
	if len(value) == 0 {
		return append(dst, 0)
	}
	return append(dst, value...)
}

// appendMappingHeaders writes the user-header block in a fixed order:
// kafka.v, kafka.ts, kafka.tstype, kafka.codec, then either kafka.envelope
// or kafka.key, kafka.value and the kafka.h.* entries in record order.
func appendMappingHeaders(dst []byte, r *codec.Record, p *recordPlan) []byte {
	dst = append(dst, versionEntry...)
	switch {
	case p.ms == 0:
		dst = appendEntryString(dst, HeaderTime, KindString, tsEpoch)
	case p.clamped:
		var ms [8]byte
		le.PutUint64(ms[:], uint64(p.ms))
		dst = appendEntryString(dst, HeaderTime, KindInt64, ms[:])
	}
	if p.logAppend {
		dst = append(dst, logAppendEntry...)
	}
	if p.codec != codec.CompressionNone {
		var mark [codecMarkLen]byte
		mark[0] = byte(p.codec)
		le.PutUint32(mark[1:], uint32(p.count))
		dst = appendEntryString(dst, HeaderCodec, KindRaw, mark[:])
	}
	if p.envelope {
		return appendEntryString(dst, HeaderEnvelope, KindUint8, oneByte)
	}
	if r.Key != nil {
		dst = appendEntryString(dst, HeaderKey, KindRaw, r.Key)
	}
	if r.Value == nil {
		dst = appendEntryString(dst, HeaderValue, KindString, valueNull)
	} else if len(r.Value) == 0 {
		dst = appendEntryString(dst, HeaderValue, KindString, valueEmpty)
	}
	h := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for h.Next() {
		dst = appendPrefixedEntry(dst, h.Key(), h.Value())
	}
	return dst
}

// versionEntry is the kafka.v = 1 entry every mapped message starts its
// user headers with, encoded once: one copy instead of six appends per
// message (appendMappingHeaders was 10 % of produce CPU at 100 B).
var versionEntry = appendEntryString(nil, HeaderVersion, KindUint8, oneByte)

// versionWords is versionEntry as words, for versionOnly.
var versionWords = [3]uint64{le.Uint64(versionEntry), le.Uint64(versionEntry[8:]), uint64(le.Uint16(versionEntry[16:]))}

// versionOnly reports whether a user-header block is versionEntry alone:
// three loads and compares, where a byte compare is a call (once per
// record of every Fetch over Iggy).
func versionOnly(b []byte) bool {
	return len(b) == len(versionEntry) && le.Uint64(b) == versionWords[0] && le.Uint64(b[8:]) == versionWords[1] &&
		uint64(le.Uint16(b[16:])) == versionWords[2]
}

// logAppendEntry is the kafka.tstype = 1 entry of every message of a
// LogAppendTime batch, encoded once.
var logAppendEntry = appendEntryString(nil, HeaderTimeType, KindUint8, oneByte)

// appendPrefixedEntry writes kafka.h.<name> (String) = value (Raw).
func appendPrefixedEntry(dst, name, value []byte) []byte {
	dst = append(dst, byte(KindString))
	dst = le.AppendUint32(dst, uint32(len(HeaderPrefix)+len(name)))
	dst = append(dst, HeaderPrefix...)
	dst = append(dst, name...)
	return appendTLV(dst, KindRaw, value)
}

// envelopeSize is the payload size of r's envelope.
func envelopeSize(r *codec.Record) int {
	n := envFixed + len(r.Key) + len(r.Value)
	h := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for h.Next() {
		n += envPerHeader + len(h.Key()) + len(h.Value())
	}
	return n
}

// appendEnvelope writes r as an envelope (docs/MAPPING.md): presence bits,
// key, value, header count, then each header with its own presence bit.
func appendEnvelope(dst []byte, r *codec.Record) []byte {
	var presence byte
	if r.Key != nil {
		presence |= 1
	}
	if r.Value != nil {
		presence |= 2
	}
	dst = append(dst, presence)
	dst = appendLenBytes(dst, r.Key)
	dst = appendLenBytes(dst, r.Value)
	dst = le.AppendUint32(dst, uint32(r.HeaderCount))
	h := codec.NewHeaderIter(r.Headers, r.HeaderCount)
	for h.Next() {
		var hp byte
		if h.Value() != nil {
			hp = 1
		}
		dst = append(dst, hp)
		dst = appendLenBytes(dst, h.Key())
		dst = appendLenBytes(dst, h.Value())
	}
	return dst
}

func appendLenBytes(dst, b []byte) []byte {
	dst = le.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// messageID derives the id of record i of an idempotent batch, so a retried
// produce carries the same ids and the gateway can rebuild its producer
// state from what is stored (ParseMessageID). Layout (bytes, u128 LE as
// Rust reads it):
//
//	0..4   sequence (base sequence + i, wrapping at 2^31 as Kafka does), u32 LE
//	4..6   producer epoch, u16 LE
//	6..14  producer id, u64 LE
//	14     bits 0..6: id layout version (2; 3 in a transactional batch);
//	       bit 7: first record of its batch
//	15     'K' (0x4B), marking a gateway-derived id
//
// Non-idempotent batches (producer id < 0) get the all-zero id.
func (e *encoder) messageID(id []byte, i uint32) {
	if e.rb.ProducerID < 0 {
		return
	}
	seq := (int64(e.rb.BaseSequence) + int64(i)) % (math.MaxInt32 + 1)
	binary.LittleEndian.PutUint32(id[0:], uint32(seq))
	binary.LittleEndian.PutUint16(id[4:], uint16(e.rb.ProducerEpoch))
	binary.LittleEndian.PutUint64(id[6:], uint64(e.rb.ProducerID))
	id[14] = IDLayoutVersion
	if e.rb.IsTransactional() {
		id[14] = IDLayoutTxn
	}
	if i == 0 {
		id[14] |= idFirstRecord
	}
	id[15] = 'K'
}

// Message-id layout versions (id byte 14, bits 0..6). A reader that knows
// only IDLayoutVersion reads none of the others as producer state: each
// new meaning got a new version rather than a bit an old parser ignores.
const (
	// IDLayoutVersion: a record of an idempotent batch.
	IDLayoutVersion = 2
	// IDLayoutTxn: a record of a transactional batch (same fields).
	IDLayoutTxn = 3
	// IDLayoutAbort and IDLayoutCommit: a transaction marker (EncodeMarker).
	IDLayoutAbort  = 4
	IDLayoutCommit = 5
)

// idFirstRecord flags the first record of a batch in id byte 14.
const idFirstRecord = 0x80

// ProducerSeq is what a gateway-derived message id says about its record.
type ProducerSeq struct {
	ProducerID int64
	Epoch      int16
	// Sequence is the record's sequence; -1 for a transaction marker.
	Sequence int32
	// First is set on the first record of the Kafka batch the record came
	// in: a stored batch runs from a First record up to the next one.
	First bool
	// Transactional: the record came in a transactional batch (a
	// transaction marker is transactional too). Transactional records are
	// idempotent records as well: producer state counts them alike.
	Transactional bool
}

// ParseMessageID reads a message id of a data record written by messageID
// (layout 2 or 3). ok is false for any other id: zero (not idempotent),
// native producers' ids, ids of layout version 1, which did not mark
// batch boundaries, and transaction markers (ParseMarkerID), which hold
// no sequence.
func ParseMessageID(id *[16]byte) (ProducerSeq, bool) {
	if id[15] != 'K' {
		return ProducerSeq{}, false
	}
	txn := false
	switch id[14] &^ idFirstRecord {
	case IDLayoutVersion:
	case IDLayoutTxn:
		txn = true
	default:
		return ProducerSeq{}, false
	}
	seq := binary.LittleEndian.Uint32(id[0:])
	epoch := binary.LittleEndian.Uint16(id[4:])
	pid := binary.LittleEndian.Uint64(id[6:])
	if seq > math.MaxInt32 || epoch > math.MaxInt16 || pid > math.MaxInt64 {
		return ProducerSeq{}, false
	}
	return ProducerSeq{
		ProducerID: int64(pid), Epoch: int16(epoch), Sequence: int32(seq),
		First: id[14]&idFirstRecord != 0, Transactional: txn,
	}, true
}

// FetchCursor carries state while Kafka records are built from Iggy batches.
// One cursor serves one partition of one Fetch response, over as many
// AppendKafkaBatch calls as there are stored batches.
type FetchCursor struct {
	// From is the first offset wanted; messages below it are skipped.
	From uint64
	// MaxBytes caps the bytes appended over all calls with this cursor
	// (a first batch is always allowed at least one record, as KIP-74 asks).
	MaxBytes int
	// Next is set to one past the last offset appended.
	Next uint64
	// Records counts the records appended over all calls.
	Records int
	// Bytes counts the bytes appended over all calls.
	Bytes int
	// Uncompressed builds every batch uncompressed, whatever the producer
	// sent (kafka.codec): for the gateway's own readers of the records.
	Uncompressed bool
	// Controls counts the control records (transaction markers) among
	// Records, over all calls.
	Controls int
	// A compressed run the previous stored batch ended inside: its codec
	// and the records still to come. A stored batch that starts right
	// where it stopped continues the run in a batch of the same codec
	// (a server returns a partition in chunks that cut produce batches).
	runCodec int8
	runLeft  uint32
}

// AppendKafkaBatch appends, to dst, one Kafka v2 record batch holding the
// messages of the Iggy batch b at offsets >= cur.From, within cur.MaxBytes.
// Messages written by a Kafka producer through the gateway read back as the
// same record; native Iggy messages read back with a null key and their own
// headers. It returns dst unchanged when nothing fits.
//
// A message that cannot be read (bad TLV block, unknown kafka.v or envelope
// version, broken envelope, offsets out of order) ends the batch: dst then
// holds the complete batch of the records before it, cur.Next is that
// message's offset, and the error wraps ErrUnmappable. A malformed b gives
// ErrInvalidBatch. It allocates nothing when dst has the capacity.
func AppendKafkaBatch(dst []byte, b []byte, cur *FetchCursor) ([]byte, error) {
	dst, _, err := appendKafkaBatch(dst, b, cur)
	return dst, err
}

// appendKafkaBatch is AppendKafkaBatch that also returns b's header, so a
// caller needs not parse b again (a zero view when b is malformed).
func appendKafkaBatch(dst []byte, b []byte, cur *FetchCursor) ([]byte, BatchView, error) {
	v, err := ParseIggyBatch(b)
	if err != nil {
		return dst, BatchView{}, err
	}
	f := fetcher{last: -1}
	it := NewIggyMessageIter(v)
	for it.Next() {
		m := it.Message()
		if m.Offset < cur.From {
			continue
		}
		var more bool
		if dst, more, err = f.append(dst, m, cur); err != nil || !more {
			break
		}
	}
	if err == nil {
		err = it.Err()
	}
	cur.runCodec, cur.runLeft = 0, 0
	if f.started {
		comp, left := f.comp, f.left
		var kept bool
		if dst, kept = f.closeBatch(dst, cur); kept && left > 0 {
			cur.runCodec, cur.runLeft = comp, left
		}
	}
	f.release()
	return dst, v, err
}

// fetcher builds one Kafka batch from the messages of one Iggy batch. It
// holds no pointer to the cursor: escape analysis cannot follow its byte
// slices, and a cursor stored beside them would be moved to the heap.
type fetcher struct {
	bb      codec.BatchBuilder
	started bool
	base    int64
	firstTs int64
	// logAppend: the open batch is LogAppendTime; it holds only messages
	// of one append time (firstTs).
	logAppend bool
	last      int64 // offset of the last record appended, -1 before any
	rec       kafkaRecord
	// The open batch's compression: the codec of the run it holds (0:
	// none), the run's records still to come, and where the batch starts
	// in dst and in the cursor's counts, so that it can be compressed (or
	// dropped, over the budget) when it closes.
	comp            int8
	left            uint32
	start           int
	recsAt, bytesAt int
	nextAt          uint64
	scratch         *[]byte
	// The open batch's transactional kind (txnNone, txnData, txnControl)
	// and, when not txnNone, its producer and the last record's sequence.
	txn     uint8
	pid     int64
	epoch   int16
	lastSeq int32
}

// compressScratch holds the buffers batches are compressed into.
var compressScratch = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// closeBatch finishes the open batch. A compressed run is compressed now
// and counted at its compressed size, as Kafka counts a stored batch;
// when that passes the cursor's budget and the batch is not the cursor's
// first, it is dropped whole (kept false, the cursor as before it): Kafka
// never splits a batch, and the next Fetch starts with it.
func (f *fetcher) closeBatch(dst []byte, cur *FetchCursor) ([]byte, bool) {
	dst = f.bb.Finish(dst)
	f.started = false
	comp := f.comp
	f.comp, f.left = 0, 0
	if comp == codec.CompressionNone {
		return dst, true
	}
	if f.scratch == nil {
		f.scratch = compressScratch.Get().(*[]byte)
	}
	out, scratch, err := codec.CompressBatch(dst, f.start, comp, *f.scratch)
	*f.scratch = scratch[:0]
	if err != nil {
		return dst, true // sent uncompressed
	}
	size := len(out) - f.start
	if f.recsAt > 0 && f.bytesAt+size > cur.MaxBytes {
		cur.Records, cur.Bytes, cur.Next = f.recsAt, f.bytesAt, f.nextAt
		return out[:f.start], false
	}
	cur.Bytes = f.bytesAt + size
	return out, true
}

// release gives the scratch buffer back; the fetcher is done.
func (f *fetcher) release() {
	if f.scratch != nil {
		if cap(*f.scratch) <= 4<<20 {
			compressScratch.Put(f.scratch)
		}
		f.scratch = nil
	}
}

// append adds m as a record; more=false when the byte budget is spent.
func (f *fetcher) append(dst []byte, m *IggyMessage, cur *FetchCursor) ([]byte, bool, error) {
	if m.Offset > math.MaxInt64 || int64(m.Offset) <= f.last ||
		(f.started && int64(m.Offset)-f.base > math.MaxInt32) {
		cur.Next = m.Offset
		return dst, false, fmt.Errorf("%w: offset %d out of order", ErrUnmappable, m.Offset)
	}
	r := &f.rec
	if err := r.decode(m); err != nil {
		cur.Next = m.Offset
		return dst, false, fmt.Errorf("%w at offset %d: %w", ErrUnmappable, m.Offset, err)
	}
	if cur.Uncompressed {
		r.runLen = 0
	}
	r.txn = txnNone
	if m.ID[15] == 'K' && m.ID[14]&^idFirstRecord > IDLayoutVersion {
		r.readTxn(m)
	}
	if f.started && (r.runLen > 0 || (f.comp != codec.CompressionNone && f.left == 0) ||
		r.logAppend != f.logAppend || (r.logAppend && r.ts != f.firstTs) ||
		r.txn != f.txn || (r.txn != txnNone && f.txnBreak(r, m))) {
		// A compressed run starts here, or the open one has all its
		// records, or the timestamp type or the append time changes
		// (a batch has one), or a producer's transactional batch begins
		// or ends (a marker is a batch of its own): the open batch
		// ends, and m opens the next.
		var kept bool
		if dst, kept = f.closeBatch(dst, cur); !kept {
			return dst, false, nil
		}
	}
	base, firstTs := f.base, f.firstTs
	if !f.started {
		base, firstTs = int64(m.Offset), r.ts
	}
	offDelta, tsDelta := int32(int64(m.Offset)-base), r.ts-firstTs
	body := r.kafkaBodySize(offDelta, tsDelta)
	size := varintLen(int64(body)) + body
	if !f.started {
		size += codec.BatchHeaderLen
	}
	// The compressed run a batch opened by m holds: m's own, or the one
	// the previous stored batch ended inside when m is where it stopped.
	var openComp int8
	var openLeft uint32
	if !f.started {
		switch {
		case r.runLen > 0:
			openComp, openLeft = r.codec, r.runLen
		case f.last < 0 && cur.runLeft > 0 && cur.Records > 0 && m.Offset == cur.Next && r.txn != txnControl:
			openComp, openLeft = cur.runCodec, cur.runLeft
		}
	}
	inRun := openLeft > 0 || (f.started && f.comp != codec.CompressionNone)
	if !inRun && cur.Records > 0 && cur.Bytes+size > cur.MaxBytes {
		// A compressed run is checked whole, at its compressed size,
		// when it closes.
		return dst, false, nil
	}
	if !f.started {
		f.start, f.recsAt, f.bytesAt, f.nextAt = len(dst), cur.Records, cur.Bytes, cur.Next
		f.comp, f.left = openComp, openLeft
		dst = f.bb.Begin(dst, base, firstTs)
		if r.logAppend {
			f.bb.LogAppendTime()
		}
		f.started, f.base, f.firstTs, f.logAppend = true, base, firstTs, r.logAppend
		if f.txn = r.txn; r.txn != txnNone {
			f.openTxn(r)
		}
	}
	if f.left > 0 {
		f.left--
	}
	dst = f.bb.AppendRecordSized(dst, body, offDelta, tsDelta, r.key, r.value, r.nHeaders)
	if r.nHeaders > 0 {
		// Building the iterator (a struct of ~100 bytes, zeroed and
		// copied) cost more than the rest of a header-less record: 17 %
		// of the gateway's Fetch CPU over a real Iggy server.
		hi := r.headerIter()
		for hi.next() {
			dst = f.bb.AppendHeader(dst, hi.name, hi.value)
		}
	}
	f.last = int64(m.Offset)
	if r.txn != txnNone {
		f.lastSeq = r.ps.Sequence
		if r.txn == txnControl {
			cur.Controls++
		}
	}
	cur.Next = m.Offset + 1
	cur.Records++
	cur.Bytes += size
	return dst, true, nil
}

// Transactional kinds of a record (kafkaRecord.txn) and of a batch.
const (
	txnNone    = iota // a plain or idempotent record: producer id -1 on Fetch
	txnData           // a record of a transactional batch
	txnControl        // a transaction marker
)

// readTxn sets r.txn and r.ps from m's id, for a message whose id is a
// gateway id of a layout past IDLayoutVersion. A marker whose contents do
// not agree with its id reads as an ordinary record (parseMarker).
func (r *kafkaRecord) readTxn(m *IggyMessage) {
	if ps, ok := ParseMessageID(&m.ID); ok {
		r.txn, r.ps = txnData, ps
		return
	}
	if ps, _, _, ok := ParseMarker(m); ok {
		r.txn, r.ps = txnControl, ps
	}
}

// txnBreak reports that the transactional record r (m) cannot join the
// open batch of the same kind: a marker is a batch of its own, and a
// transactional batch holds one producer batch, records of one producer
// id and epoch at consecutive offsets and sequences.
func (f *fetcher) txnBreak(r *kafkaRecord, m *IggyMessage) bool {
	return r.txn == txnControl || r.ps.First || r.ps.ProducerID != f.pid || r.ps.Epoch != f.epoch ||
		r.ps.Sequence != nextSequence(f.lastSeq) || int64(m.Offset) != f.last+1
}

// openTxn gives the batch just begun r's producer: a transactional batch
// whose base sequence is r's, or a control batch (base sequence -1).
func (f *fetcher) openTxn(r *kafkaRecord) {
	f.pid, f.epoch = r.ps.ProducerID, r.ps.Epoch
	f.bb.Producer(r.ps.ProducerID, r.ps.Epoch, r.ps.Sequence)
	if r.txn == txnControl {
		f.bb.Control()
	} else {
		f.bb.Transactional()
	}
}

// nextSequence is the sequence after s, wrapping at 2^31 as Kafka does.
func nextSequence(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// How a message's Kafka headers are stored.
const (
	modeNative   = iota // every TLV entry is a header
	modeGateway         // kafka.h.* TLV entries are the headers
	modeEnvelope        // the envelope's header list
)

// kafkaRecord is one Iggy message read as a Kafka record; slices alias it.
type kafkaRecord struct {
	key, value []byte
	ts         int64 // ms
	mode       int
	headers    []byte // TLV block, or the envelope's header list
	nHeaders   int
	// codec and runLen: the message opens a Kafka batch the producer
	// compressed with codec, of runLen records (kafka.codec); 0 otherwise.
	codec  int8
	runLen uint32
	// logAppend: ts is the log append time of a LogAppendTime batch
	// (kafka.tstype).
	logAppend bool
	// txn: the record is transactional data or a marker (txnNone for
	// any other), of producer ps.
	txn uint8
	ps  ProducerSeq
}

// errFormat is the detail behind ErrUnmappable for a broken message.
var errFormat = errors.New("bad mapping headers or envelope")

// decode reads m by the mapping rules of docs/MAPPING.md.
func (r *kafkaRecord) decode(m *IggyMessage) error {
	if versionOnly(m.UserHeaders) {
		// The usual record, a value without key or headers at its origin
		// time, carries kafka.v alone: what the scan below would find,
		// without it (per record of every Fetch over Iggy).
		r.codec, r.runLen, r.logAppend = 0, 0, false
		r.ts = fetchTime(m, nil)
		r.key, r.value, r.mode = nil, m.Payload, modeGateway
		r.headers, r.nHeaders = m.UserHeaders, 0
		return nil
	}
	var mh mappingHeaders
	if len(m.UserHeaders) == 0 {
		// No user headers: a native message, or a record the gateway stored
		// as one (docs/MAPPING.md); the scan would find nothing.
	} else if err := mh.scan(m.UserHeaders); err != nil {
		return err
	}
	if mh.version == nil {
		// A native producer's kafka.* headers mean nothing to the mapping.
		r.codec, r.runLen, r.logAppend = 0, 0, false
		r.ts = fetchTime(m, nil)
		r.key, r.value, r.mode = nil, m.Payload, modeNative
		r.headers, r.nHeaders = m.UserHeaders, mh.entries
		return nil
	}
	if !bytes.Equal(mh.version, oneByte) || (mh.ts != nil && len(mh.ts) != 8 && !bytes.Equal(mh.ts, tsEpoch)) ||
		(mh.tstype != nil && !bytes.Equal(mh.tstype, oneByte)) {
		return errFormat
	}
	r.logAppend = mh.tstype != nil
	r.ts = fetchTime(m, mh.ts)
	r.codec, r.runLen = 0, 0
	if len(mh.codec) == codecMarkLen && mh.codec[0] >= codec.CompressionGzip && mh.codec[0] <= codec.CompressionZstd {
		// Anything else in kafka.codec is ignored: it only decides how
		// the batch travels, never what the records say.
		r.codec, r.runLen = int8(mh.codec[0]), le.Uint32(mh.codec[1:])
	}
	if mh.envelope != nil {
		if !bytes.Equal(mh.envelope, oneByte) {
			return errFormat
		}
		return r.decodeEnvelope(m.Payload)
	}
	r.key, r.mode = mh.key, modeGateway
	r.headers, r.nHeaders = m.UserHeaders, mh.prefixed
	switch {
	case mh.value == nil:
		r.value = m.Payload
	case bytes.Equal(mh.value, valueNull):
		r.value = nil
	case bytes.Equal(mh.value, valueEmpty):
		r.value = m.Payload[:0]
	default:
		return errFormat
	}
	return nil
}

// fetchTime is the Kafka timestamp of m: a kafka.ts header wins (epoch, or
// the real ms of a clamped message), then the origin timestamp, and for a
// message with no origin (Kafka -1, or a native producer that set none) the
// server's append time.
func fetchTime(m *IggyMessage, ts []byte) int64 {
	switch {
	case len(ts) == 8:
		return int64(le.Uint64(ts))
	case ts != nil:
		return 0
	case m.OriginTimestamp != 0:
		return int64(m.OriginTimestamp / 1000)
	}
	return int64(m.Timestamp / 1000)
}

// SearchTime is the time (µs) a search by timestamp compares for m: the
// Kafka timestamp Fetch shows for it (fetchTime), so a search finds what a
// consumer sees. Only a message that may carry kafka.ts has its headers
// read: one at the largest delta (perhaps clamped) or with no origin
// (perhaps a Kafka record at the epoch); any other message is its origin
// timestamp, at the cost of two compares inlined. Any goroutine.
func SearchTime(m *IggyMessage) uint64 {
	if m.TimestampDelta != MaxTimestampDelta && m.OriginTimestamp != 0 {
		return m.OriginTimestamp
	}
	return searchTimeRead(m)
}

// searchTimeRead is SearchTime for a message that may carry kafka.ts.
func searchTimeRead(m *IggyMessage) uint64 {
	if m.OriginTimestamp != 0 {
		return unclamped(m)
	}
	if bytes.Equal(mappedTime(m.UserHeaders), tsEpoch) {
		return 0
	}
	return m.Timestamp
}

// UnclampedOrigin is m's origin timestamp (µs) with the clamp undone: a
// message whose Kafka timestamp lay more than MaxTimestampDelta after its
// batch's oldest was written at that delta with the real time in kafka.ts
// (docs/MAPPING.md, "Timestamps and the clamp"), which is read then. Any
// other message costs one compare, inlined. Any goroutine.
func UnclampedOrigin(m *IggyMessage) uint64 {
	if m.TimestampDelta != MaxTimestampDelta {
		return m.OriginTimestamp
	}
	return unclamped(m)
}

// unclamped reads the real time of a message at the largest delta: its
// kafka.ts, or its origin when it has none (it was not clamped).
func unclamped(m *IggyMessage) uint64 {
	ts := mappedTime(m.UserHeaders)
	if len(ts) != 8 {
		return m.OriginTimestamp
	}
	ms := int64(le.Uint64(ts))
	if ms < 0 || uint64(ms) > maxOriginMs {
		return m.OriginTimestamp // not what the mapping writes
	}
	return uint64(ms) * 1000
}

// mappedTime is the kafka.ts value of a message the mapping wrote (kafka.v
// 1), nil for any other: a native producer's kafka.* headers mean nothing,
// as in decode.
func mappedTime(block []byte) []byte {
	var mh mappingHeaders
	if mh.scan(block) != nil || !bytes.Equal(mh.version, oneByte) {
		return nil
	}
	return mh.ts
}

// mappingHeaders are the kafka.* entries of one block, found in one pass.
type mappingHeaders struct {
	version, key, value, ts, tstype, envelope, codec []byte
	entries, prefixed                                int
}

// scan validates the TLV block and picks out the mapping entries.
func (mh *mappingHeaders) scan(block []byte) error {
	if bytes.HasPrefix(block, versionEntry) {
		// Every mapped message starts with this entry (appendMappingHeaders),
		// and most hold nothing else: a compare of 18 bytes instead of
		// reading and matching one entry, per record of every Fetch.
		n := len(versionEntry)
		mh.entries, mh.version, block = 1, block[n-1:n:n], block[n:]
	}
	it := NewUserHeaderIter(block)
	for it.Next() {
		mh.entries++
		k := it.Key()
		switch {
		case bytes.HasPrefix(k, prefixBytes):
			mh.prefixed++
		case string(k) == HeaderVersion:
			mh.version = it.Value()
		case string(k) == HeaderKey:
			mh.key = it.Value()
		case string(k) == HeaderValue:
			mh.value = it.Value()
		case string(k) == HeaderTime:
			mh.ts = it.Value()
		case string(k) == HeaderTimeType:
			mh.tstype = it.Value()
		case string(k) == HeaderEnvelope:
			mh.envelope = it.Value()
		case string(k) == HeaderCodec:
			mh.codec = it.Value()
		}
	}
	return it.Err()
}

var prefixBytes = []byte(HeaderPrefix)

// decodeEnvelope reads key, value and the header list out of an envelope
// payload, checking that every length fits.
func (r *kafkaRecord) decodeEnvelope(p []byte) error {
	if len(p) < envFixed || p[0]&^3 != 0 {
		return errFormat
	}
	presence := p[0]
	key, rest, ok := readLenBytes(p[1:], presence&1 != 0)
	if !ok {
		return errFormat
	}
	value, rest, ok := readLenBytes(rest, presence&2 != 0)
	if !ok || len(rest) < 4 {
		return errFormat
	}
	n := le.Uint32(rest)
	rest = rest[4:]
	if uint64(n) > uint64(len(rest))/envPerHeader || !validEnvelopeHeaders(rest, n) {
		return errFormat
	}
	r.key, r.value, r.mode = key, value, modeEnvelope
	r.headers, r.nHeaders = rest, int(n)
	return nil
}

// readLenBytes reads a u32 length and that many bytes; present=false gives
// nil (null) and requires the length to be 0.
func readLenBytes(b []byte, present bool) ([]byte, []byte, bool) {
	if len(b) < 4 {
		return nil, b, false
	}
	n := uint64(le.Uint32(b))
	if n > uint64(len(b)-4) || (!present && n != 0) {
		return nil, b, false
	}
	end := 4 + int(n)
	if !present {
		return nil, b[end:], true
	}
	return b[4:end:end], b[end:], true
}

// validEnvelopeHeaders reports whether b holds exactly n envelope headers.
func validEnvelopeHeaders(b []byte, n uint32) bool {
	for i := uint32(0); i < n; i++ {
		var ok bool
		if _, _, b, ok = readEnvelopeHeader(b); !ok {
			return false
		}
	}
	return len(b) == 0
}

// readEnvelopeHeader reads one (presence, name, value) entry.
func readEnvelopeHeader(b []byte) (name, value, rest []byte, ok bool) {
	if len(b) < 1 || b[0]&^1 != 0 {
		return nil, nil, b, false
	}
	present := b[0] == 1
	if name, rest, ok = readLenBytes(b[1:], true); !ok {
		return nil, nil, b, false
	}
	if value, rest, ok = readLenBytes(rest, present); !ok {
		return nil, nil, b, false
	}
	return name, value, rest, true
}

// kafkaBodySize is the exact size of the record's body in a v2 batch
// (what its length varint counts), so the byte budget can be checked and
// the length written before anything else.
func (r *kafkaRecord) kafkaBodySize(offDelta int32, tsDelta int64) int {
	body := 1 + varintLen(tsDelta) + varintLen(int64(offDelta)) +
		bytesLen(r.key) + bytesLen(r.value) + varintLen(int64(r.nHeaders))
	if r.nHeaders == 0 {
		return body // no iterator to build (see fetcher.append)
	}
	hi := r.headerIter()
	for hi.next() {
		body += varintLen(int64(len(hi.name))) + len(hi.name) + bytesLen(hi.value)
	}
	return body
}

// bytesLen is the size of a varint-length-prefixed byte string (nil = -1).
func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the size of v as a zigzag varint.
func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// headerIter yields the Kafka headers of a decoded record.
func (r *kafkaRecord) headerIter() kafkaHeaderIter {
	return kafkaHeaderIter{mode: r.mode, tlv: NewUserHeaderIter(r.headers), env: r.headers, left: r.nHeaders}
}

// kafkaHeaderIter walks the headers of one record in stored order,
// whichever way they are stored. The record was validated by decode.
type kafkaHeaderIter struct {
	mode        int
	tlv         UserHeaderIter
	env         []byte
	left        int
	name, value []byte
}

func (h *kafkaHeaderIter) next() bool {
	if h.left == 0 {
		return false
	}
	h.left--
	switch h.mode {
	case modeEnvelope:
		h.name, h.value, h.env, _ = readEnvelopeHeader(h.env)
		return true
	case modeNative:
		h.tlv.Next()
		h.name, h.value = h.tlv.Key(), h.tlv.Value()
		return true
	}
	for h.tlv.Next() {
		if k := h.tlv.Key(); bytes.HasPrefix(k, prefixBytes) {
			h.name, h.value = k[len(HeaderPrefix):], h.tlv.Value()
			return true
		}
	}
	return false
}
