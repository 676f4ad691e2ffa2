package bridge

// Transactions in the Iggy mapping (docs/MAPPING.md, "Transactions"):
// transaction markers as Iggy messages, and the scan of a stored batch for
// producer records that the transaction coordinator's recovery uses.

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/iggy-kafka/gateway/codec"
)

// HeaderControl marks a transaction marker (Uint8: 0 abort, 1 commit, the
// Kafka control record type), so a native Iggy reader can skip it.
const HeaderControl = "kafka.control"

// Marker is a Kafka transaction marker (codec.TxnMarker): producer id and
// epoch, commit or abort, the coordinator epoch and the timestamp (ms).
type Marker = codec.TxnMarker

// markerHeadersMax bounds a marker's user headers: kafka.v, kafka.ts (an
// epoch timestamp), kafka.control and kafka.key.
const markerHeadersMax = 96

// EncodeMarker appends one Iggy batch holding one message, the Kafka
// control record of m: payload the control value (version 0, coordinator
// epoch: 6 bytes, never empty), user headers kafka.v = 1, kafka.ts when
// the timestamp is 0 (as for any record), kafka.control = 0 (abort) or 1
// (commit) and kafka.key = the control key (version 0, type), origin
// timestamp m.TimestampMs (a negative one: none, Fetch shows the append
// time), and a message id that marks it as a marker of m's producer id and
// epoch (ParseMarkerID). Checksums as EncodeKafkaRecords writes them; the
// stats' Prepared is what AppendStaged takes. ErrRecordInvalid for a
// negative producer id or epoch. Any goroutine; no allocation when dst
// has the capacity.
func EncodeMarker(dst []byte, m Marker) ([]byte, ProduceStats, error) {
	if m.ProducerID < 0 || m.Epoch < 0 {
		return dst, ProduceStats{}, ErrRecordInvalid
	}
	origin, ok := originOf(m.TimestampMs)
	if !ok {
		origin = 0
	}
	var hb [markerHeadersMax]byte
	h := append(hb[:0], versionEntry...)
	if m.TimestampMs == 0 {
		h = appendEntryString(h, HeaderTime, KindString, tsEpoch)
	}
	kind := byte(codec.ControlAbort)
	if m.Commit {
		kind = codec.ControlCommit
	}
	h = appendEntryString(h, HeaderControl, KindUint8, []byte{kind})
	key, value := codec.ControlKey(m.Commit), codec.ControlValue(m.CoordinatorEpoch)
	h = appendEntryString(h, HeaderKey, KindRaw, key[:])
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	le.PutUint64(dst[start+bhOriginTs:], origin)
	dst = appendFrame(dst, markerID(m), 0, 0, value[:], h)
	finishBatch(dst[start:], 1)
	return dst, ProduceStats{Messages: 1, Bytes: len(dst) - start,
		Prepared: Prepared{Times: BatchTimes{Known: true, MaxOrigin: origin, ZeroOrigin: origin == 0}}}, nil
}

// markerID is the message id of a marker (docs/MAPPING.md): the low 32
// bits of its timestamp (ms) where a record has its sequence, so that the
// markers of one producer id and epoch differ (a transaction-v1 producer
// keeps its epoch from one transaction to the next), then epoch and
// producer id, layout IDLayoutAbort or IDLayoutCommit with the
// first-of-batch bit (a marker is a batch of its own), 'K'.
func markerID(m Marker) [16]byte {
	var id [16]byte
	binary.LittleEndian.PutUint32(id[0:], uint32(m.TimestampMs))
	binary.LittleEndian.PutUint16(id[4:], uint16(m.Epoch))
	binary.LittleEndian.PutUint64(id[6:], uint64(m.ProducerID))
	id[14] = IDLayoutAbort | idFirstRecord
	if m.Commit {
		id[14] = IDLayoutCommit | idFirstRecord
	}
	id[15] = 'K'
	return id
}

// ParseMarkerID reads the id of a transaction marker (EncodeMarker): ps
// holds its producer id and epoch, Sequence -1, First and Transactional
// set. ok is false for any other id. It says what the id says; a message
// is a marker when its contents agree too (ScanProducerRecords, Fetch).
func ParseMarkerID(id *[16]byte) (ps ProducerSeq, commit bool, ok bool) {
	if id[15] != 'K' {
		return ProducerSeq{}, false, false
	}
	switch id[14] {
	case IDLayoutAbort | idFirstRecord:
	case IDLayoutCommit | idFirstRecord:
		commit = true
	default:
		return ProducerSeq{}, false, false
	}
	epoch := binary.LittleEndian.Uint16(id[4:])
	pid := binary.LittleEndian.Uint64(id[6:])
	if epoch > math.MaxInt16 || pid > math.MaxInt64 {
		return ProducerSeq{}, false, false
	}
	return ProducerSeq{ProducerID: int64(pid), Epoch: int16(epoch), Sequence: -1, First: true, Transactional: true}, commit, true
}

// ParseMarker reads m as a transaction marker: its id (ParseMarkerID) and
// what EncodeMarker writes beside it, which must agree (kafka.v = 1,
// kafka.control and the control key of the id's type, the control value
// as payload); coordEpoch is the control value's coordinator epoch. ok is
// false for anything else, which then reads as an ordinary record: a
// native producer's id that happens to look like a marker's never hides
// data. Any goroutine; no allocation.
func ParseMarker(m *IggyMessage) (ps ProducerSeq, commit bool, coordEpoch int32, ok bool) {
	if ps, commit, ok = ParseMarkerID(&m.ID); !ok {
		return ProducerSeq{}, false, 0, false
	}
	var mh mappingHeaders
	if mh.scan(m.UserHeaders) != nil || !bytes.Equal(mh.version, oneByte) || mh.envelope != nil || mh.value != nil {
		return ProducerSeq{}, false, 0, false
	}
	c, coordEpoch, valid := codec.ParseControlRecord(mh.key, m.Payload)
	kind := userHeader(m.UserHeaders, HeaderControl)
	if !valid || c != commit || len(kind) != 1 || (kind[0] == codec.ControlCommit) != commit || kind[0] > codec.ControlCommit {
		return ProducerSeq{}, false, 0, false
	}
	return ps, commit, coordEpoch, true
}

// userHeader is the value of the first entry named name in a valid TLV
// block, nil when there is none.
func userHeader(block []byte, name string) []byte {
	it := NewUserHeaderIter(block)
	for it.Next() {
		if string(it.Key()) == name {
			return it.Value()
		}
	}
	return nil
}

// ScanProducerRecords calls fn, in offset order, for every message of the
// stored Iggy batch b that a producer id stands on: records of idempotent
// and transactional batches (control false; ps as ParseMessageID reads
// it) and transaction markers (control true, commit their outcome; ps as
// ParseMarkerID reads it). Other messages are skipped. It stops when fn
// returns false. Errors are ParseIggyBatch's and the message iterator's
// (ErrInvalidBatch). The transaction coordinator's recovery uses it to
// find, per partition, where each producer's open transaction starts and
// which markers are written. Any goroutine; no allocation.
func ScanProducerRecords(b []byte, fn func(offset uint64, ps ProducerSeq, control, commit bool) bool) error {
	v, err := ParseIggyBatch(b)
	if err != nil {
		return err
	}
	it := NewIggyMessageIter(v)
	for it.Next() {
		m := it.Message()
		if ps, ok := ParseMessageID(&m.ID); ok {
			if !fn(m.Offset, ps, false, false) {
				return nil
			}
		} else if ps, commit, _, ok := ParseMarker(m); ok {
			if !fn(m.Offset, ps, true, commit) {
				return nil
			}
		}
	}
	return it.Err()
}
