package iggy

import (
	"encoding/binary"
	"errors"

	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// The record of one group-offset change in the state stream's
// GroupOffsetTopic (docs/CONSUMER_GROUPS.md, "the group log"): the payload
// of one Iggy message,
//
//	u8 version (1)
//	u8 kind: 1 commit, 2 delete one offset, 3 delete the group
//	uvarint len, stream    the Kafka stream (--stream) the group lives in
//	uvarint len, group
//	kinds 1 and 2:
//	  uvarint len, topic
//	  u32 LE partition
//	kind 1:
//	  u32 LE topic id      bridge.TopicInfo.ID at commit time, 0 unknown
//	  i64 LE offset        Kafka's, as committed (0 and negatives included)
//	  i32 LE leader epoch  -1 unknown
//	  i64 LE commit time   ms since the epoch
//	  uvarint len, metadata
//
// Nothing may follow. Lengths are bounded (names 255 bytes as on Iggy,
// metadata maxRecordMetadata), so a decoded record never holds more than
// the payload it came from.
const (
	groupRecordVersion = 1

	recCommit      = 1
	recDeleteOne   = 2
	recDeleteGroup = 3

	maxRecordName     = 255
	maxRecordMetadata = 1 << 16
)

var (
	errRecordVersion = errors.New("iggy: group record: unknown version")
	errRecordBad     = errors.New("iggy: group record: malformed")
)

// groupRecord is one decoded record. Topic/Partition are set for kinds 1
// and 2, the offset fields for kind 1 only.
type groupRecord struct {
	Kind        uint8
	Stream      string
	Group       string
	Topic       string
	Partition   uint32
	TopicID     uint32
	Offset      int64
	LeaderEpoch int32
	CommitTime  int64
	Metadata    string
}

// appendGroupRecord encodes r after b. The caller keeps names and
// metadata within the limits (the handlers bound them lower still).
func appendGroupRecord(b []byte, r *groupRecord) []byte {
	b = append(b, groupRecordVersion, r.Kind)
	b = appendRecordString(b, r.Stream)
	b = appendRecordString(b, r.Group)
	if r.Kind == recDeleteGroup {
		return b
	}
	b = appendRecordString(b, r.Topic)
	b = le.AppendUint32(b, r.Partition)
	if r.Kind == recDeleteOne {
		return b
	}
	b = le.AppendUint32(b, r.TopicID)
	b = le.AppendUint64(b, uint64(r.Offset))
	b = le.AppendUint32(b, uint32(r.LeaderEpoch))
	b = le.AppendUint64(b, uint64(r.CommitTime))
	return appendRecordString(b, r.Metadata)
}

func appendRecordString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeGroupRecord parses one payload: errRecordVersion for a version it
// does not know (a newer gateway's), errRecordBad for anything else that
// is not exactly one record.
func decodeGroupRecord(p []byte) (groupRecord, error) {
	var r groupRecord
	if len(p) < 2 {
		return r, errRecordBad
	}
	if p[0] != groupRecordVersion {
		return r, errRecordVersion
	}
	if p[1] < recCommit || p[1] > recDeleteGroup {
		return r, errRecordBad
	}
	r.Kind = p[1]
	rd := wire.NewReader(p[2:])
	r.Stream = readRecordString(rd, maxRecordName)
	r.Group = readRecordString(rd, maxRecordName)
	if r.Kind != recDeleteGroup {
		r.Topic = readRecordString(rd, maxRecordName)
		r.Partition = rd.U32()
	}
	if r.Kind == recCommit {
		r.TopicID = rd.U32()
		r.Offset = int64(rd.U64())
		r.LeaderEpoch = int32(rd.U32())
		r.CommitTime = int64(rd.U64())
		r.Metadata = readRecordString(rd, maxRecordMetadata)
	}
	if rd.Failed() || rd.Len() != 0 || r.Stream == "" || r.Group == "" || (r.Kind != recDeleteGroup && r.Topic == "") {
		return groupRecord{}, errRecordBad
	}
	return r, nil
}

// readRecordString reads what appendRecordString wrote; one over limit
// bytes fails rd.
func readRecordString(rd *wire.Reader, limit int) string {
	n := rd.Uvarint()
	if n > uint64(limit) {
		rd.Fail()
		return ""
	}
	return string(rd.Bytes(int(n)))
}
