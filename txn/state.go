package txn

import (
	"encoding/binary"
	"errors"
	"math"
	"sort"
	"strconv"
	"sync"
)

// State is a transaction's state, as Kafka's coordinator names them
// (DescribeTransactions and ListTransactions answer these names).
type State uint8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
	"CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown(" + strconv.Itoa(int(s)) + ")"
}

// ParseState reads a state name; ok is false for an unknown one.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// Offset is one partition's offset committed within a transaction
// (TxnOffsetCommit), applied to its group only when the transaction
// commits.
type Offset struct {
	Partition
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// txnEntry is one transactional id's state. mu is held across every
// operation on it, markers included, so one id's steps run one at a time.
type txnEntry struct {
	mu sync.Mutex

	id string
	// The producer id and epoch in force, and the ones before the last
	// bump (a retried InitProducerId or a v2 EndTxn is answered with the
	// bump it already made; KIP-360 recovery after a timeout).
	pid, lastPid     int64
	epoch, lastEpoch int16
	timeoutMs        int32
	state            State
	// v2: the transaction runs under transaction.version 2 (KIP-890):
	// EndTxn bumps the epoch.
	v2 bool
	// parts: the partitions of the transaction, each with an offset at or
	// before its first record there (the high watermark when it was
	// added), which a restart takes as the start of the open transaction.
	parts    map[Partition]uint64
	groups   map[string]struct{}
	offsets  map[string][]Offset // TxnOffsetCommit's, by group, applied at commit
	startMs  int64               // when it went Ongoing; -1 when not
	updateMs int64
	// gone: the entry was removed from the coordinator (expired); an
	// operation that found it before must look again.
	gone bool
}

// record layout version.
const recordVersion = 1

var errRecord = errors.New("txn: malformed state record")

// encode is the entry's stored form (key "t/"+id):
//
//	u8 version, i64 pid, i16 epoch, i64 last pid, i16 last epoch,
//	i32 timeout ms, u8 state, u8 flags (bit 0: v2), i64 start ms,
//	i64 update ms, u32 partitions, each (u16 len topic, topic,
//	i32 partition, u64 bound), u32 groups, each (u16 len, group)
//
// all big-endian; partitions and groups sorted, so equal states encode
// alike.
func (e *txnEntry) encode() []byte {
	b := make([]byte, 0, 64+len(e.parts)*32)
	b = append(b, recordVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(e.pid))
	b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(e.lastPid))
	b = binary.BigEndian.AppendUint16(b, uint16(e.lastEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(e.timeoutMs))
	b = append(b, byte(e.state))
	var flags byte
	if e.v2 {
		flags |= 1
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint64(b, uint64(e.startMs))
	b = binary.BigEndian.AppendUint64(b, uint64(e.updateMs))
	parts := e.sortedParts()
	b = binary.BigEndian.AppendUint32(b, uint32(len(parts)))
	for _, p := range parts {
		b = appendString(b, p.Topic)
		b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
		b = binary.BigEndian.AppendUint64(b, e.parts[p])
	}
	groups := e.sortedGroups()
	b = binary.BigEndian.AppendUint32(b, uint32(len(groups)))
	for _, g := range groups {
		b = appendString(b, g)
	}
	return b
}

func (e *txnEntry) sortedParts() []Partition {
	ps := make([]Partition, 0, len(e.parts))
	for p := range e.parts {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
	return ps
}

func (e *txnEntry) sortedGroups() []string {
	gs := make([]string, 0, len(e.groups))
	for g := range e.groups {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	return gs
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// reader reads the big-endian fields of a record; a short record sets bad.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() byte    { return r.take(1)[0] }
func (r *reader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *reader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *reader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }
func (r *reader) str() string { return string(r.take(int(r.u16()))) }

// count reads a list length, refusing one the rest cannot hold (each item
// at least min bytes), so a bad record cannot ask for a huge allocation.
func (r *reader) count(min int) int {
	n := r.u32()
	if r.bad || n > math.MaxInt32 || int(n)*min > len(r.b) {
		r.bad = true
		return 0
	}
	return int(n)
}

// decodeEntry reads an entry encode wrote.
func decodeEntry(id string, v []byte) (*txnEntry, error) {
	r := reader{b: v}
	if r.u8() != recordVersion {
		return nil, errRecord
	}
	e := &txnEntry{id: id, parts: map[Partition]uint64{}, groups: map[string]struct{}{}, offsets: map[string][]Offset{}}
	e.pid = int64(r.u64())
	e.epoch = int16(r.u16())
	e.lastPid = int64(r.u64())
	e.lastEpoch = int16(r.u16())
	e.timeoutMs = int32(r.u32())
	e.state = State(r.u8())
	e.v2 = r.u8()&1 != 0
	e.startMs = int64(r.u64())
	e.updateMs = int64(r.u64())
	n := r.count(14)
	for range n {
		p := Partition{Topic: r.str()}
		p.Partition = int32(r.u32())
		e.parts[p] = r.u64()
	}
	n = r.count(2)
	for range n {
		e.groups[r.str()] = struct{}{}
	}
	if r.bad || len(r.b) != 0 || int(e.state) >= len(stateNames) {
		return nil, errRecord
	}
	if e.state != Ongoing && e.state != PrepareCommit && e.state != PrepareAbort {
		// A complete state is stored before the ended transaction's
		// partitions are dropped (complete): they are not the next one's.
		clear(e.parts)
		clear(e.groups)
	}
	return e, nil
}

// encodeOffsets is the stored form of pending offsets (key "o/"+id):
// u32 groups, each (u16 len group, u32 n, n × (u16 len topic, topic,
// i32 partition, i64 offset, i32 leader epoch, u16 len metadata,
// metadata)).
func encodeOffsets(offs map[string][]Offset) []byte {
	groups := make([]string, 0, len(offs))
	for g := range offs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	b := binary.BigEndian.AppendUint32(nil, uint32(len(groups)))
	for _, g := range groups {
		b = appendString(b, g)
		b = binary.BigEndian.AppendUint32(b, uint32(len(offs[g])))
		for _, o := range offs[g] {
			b = appendString(b, o.Topic)
			b = binary.BigEndian.AppendUint32(b, uint32(o.Partition.Partition))
			b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
			b = binary.BigEndian.AppendUint32(b, uint32(o.LeaderEpoch))
			b = appendString(b, o.Metadata)
		}
	}
	return b
}

func decodeOffsets(v []byte) (map[string][]Offset, error) {
	r := reader{b: v}
	out := map[string][]Offset{}
	ng := r.count(6)
	for range ng {
		g := r.str()
		n := r.count(20)
		offs := make([]Offset, 0, n)
		for range n {
			var o Offset
			o.Topic = r.str()
			o.Partition.Partition = int32(r.u32())
			o.Offset = int64(r.u64())
			o.LeaderEpoch = int32(r.u32())
			o.Metadata = r.str()
			offs = append(offs, o)
		}
		out[g] = offs
	}
	if r.bad || len(r.b) != 0 {
		return nil, errRecord
	}
	return out, nil
}

// Keys of the state store.
const (
	keyTxn     = "t/" // + transactional id: the entry
	keyOffsets = "o/" // + transactional id: pending offsets
	keyAborted = "a/" // + abortedKey: one aborted transaction
	// keyEpoch holds the coordinator epoch of the last start, u32 BE.
	keyEpoch = "coordinator-epoch"
)

// abortedKey names one aborted transaction on a partition: u16 len topic,
// topic, i32 partition, i64 producer id, u64 first; the value is the u64
// marker offset.
func abortedKey(p Partition, a Aborted) string {
	b := appendString([]byte(keyAborted), p.Topic)
	b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, a.First)
	return string(b)
}

func parseAborted(key string, v []byte) (Partition, Aborted, error) {
	r := reader{b: []byte(key[len(keyAborted):])}
	p := Partition{Topic: r.str()}
	p.Partition = int32(r.u32())
	a := Aborted{ProducerID: int64(r.u64()), First: r.u64()}
	if r.bad || len(r.b) != 0 || len(v) != 8 {
		return p, a, errRecord
	}
	a.Last = binary.BigEndian.Uint64(v)
	return p, a, nil
}
