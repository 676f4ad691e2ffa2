package codec

import "encoding/binary"

// TxnMarker is a Kafka transaction marker: the control record a
// transaction coordinator writes to every partition of a transaction when
// it ends, telling readers whether the producer's records before it (of
// that producer id and epoch, since its previous marker) count.
type TxnMarker struct {
	ProducerID int64
	Epoch      int16
	Commit     bool // false: abort
	// CoordinatorEpoch is the coordinator's epoch, which Kafka writes in
	// the marker's value so a stale coordinator's markers can be told
	// apart.
	CoordinatorEpoch int32
	// TimestampMs is the marker's timestamp (Kafka writes the time it
	// wrote the marker).
	TimestampMs int64
}

// Sizes of a transaction marker's control record key (version int16 0,
// type int16) and value (version int16 0, coordinator epoch int32).
const (
	ControlKeyLen   = 4
	ControlValueLen = 6
)

// Control record types (the key's type field) of transaction markers.
const (
	ControlAbort  = 0
	ControlCommit = 1
)

// ControlKey is the key of a marker's control record: version 0, type
// ControlCommit or ControlAbort, big-endian as Kafka writes it.
func ControlKey(commit bool) [ControlKeyLen]byte {
	var k [ControlKeyLen]byte
	if commit {
		k[3] = ControlCommit
	}
	return k
}

// ControlValue is the value of a marker's control record: version 0 and
// the coordinator epoch.
func ControlValue(coordinatorEpoch int32) [ControlValueLen]byte {
	var v [ControlValueLen]byte
	binary.BigEndian.PutUint32(v[2:], uint32(coordinatorEpoch))
	return v
}

// ParseControlRecord reads a transaction marker's control record: a key
// of exactly version 0 and type abort or commit, a value of exactly
// version 0 and a coordinator epoch. ok is false for anything else
// (other control types, other versions). Any goroutine; no allocation.
func ParseControlRecord(key, value []byte) (commit bool, coordinatorEpoch int32, ok bool) {
	if len(key) != ControlKeyLen || len(value) != ControlValueLen ||
		key[0] != 0 || key[1] != 0 || key[2] != 0 || key[3] > ControlCommit ||
		value[0] != 0 || value[1] != 0 {
		return false, 0, false
	}
	return key[3] == ControlCommit, int32(binary.BigEndian.Uint32(value[2:])), true
}

// AppendTxnMarker appends the control batch a Kafka broker writes for m
// at baseOffset: attributes transactional|control, m's producer id and
// epoch, base sequence -1, one record (offset and timestamp delta 0) with
// the control key and value, both timestamps m.TimestampMs, CRC-32C.
// Any goroutine; no allocation when dst has the capacity.
func AppendTxnMarker(dst []byte, baseOffset int64, m TxnMarker) []byte {
	var bb BatchBuilder
	dst = bb.Begin(dst, baseOffset, m.TimestampMs)
	bb.Producer(m.ProducerID, m.Epoch, -1)
	bb.Control()
	k, v := ControlKey(m.Commit), ControlValue(m.CoordinatorEpoch)
	dst = bb.AppendRecordSized(dst, ControlRecordBodyLen, 0, 0, k[:], v[:], 0)
	return bb.Finish(dst)
}

// ControlRecordBodyLen is the body length of a marker's record at offset
// and timestamp delta 0: attributes, two 1-byte deltas, the key and value
// with their 1-byte lengths, the header count.
const ControlRecordBodyLen = 1 + 1 + 1 + 1 + ControlKeyLen + 1 + ControlValueLen + 1
