package share

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/iggy-kafka/gateway/bridge"
)

// The durable state of a share partition is one entry of the gateway's
// small-state store (bridge.TxnStateStore), key KeyPrefix + group + "\x00"
// + topic + "\x00" + partition, its value:
//
//	u8 version (1), topic id [16], i64 start offset, u32 runs,
//	runs x (i64 first offset, u32 count, u8 state, i16 deliveries)
//
// A run is a stretch of in-flight offsets with one state and delivery
// count. An acquired record is kept as available (its lock does not
// survive the process), so after a restart every record not acknowledged
// is delivered again, and none that was.

// KeyPrefix starts every key of share-group state in the store; other
// owners of the store skip such keys.
const KeyPrefix = bridge.ShareStateKeyPrefix

// errState is a stored share-partition state that cannot be read.
var errState = errors.New("share: malformed share-partition state")

// stateKey is the store key of a share partition.
func stateKey(group, topic string, partition int32) string {
	return KeyPrefix + group + "\x00" + topic + "\x00" + strconv.Itoa(int(partition))
}

// parseKey splits a store key made by stateKey.
func parseKey(key string) (group, topic string, partition int32, ok bool) {
	rest, found := strings.CutPrefix(key, KeyPrefix)
	if !found {
		return "", "", 0, false
	}
	// From the right: a topic name and a partition never hold a NUL, a
	// group id may.
	i := strings.LastIndexByte(rest, 0)
	if i < 0 {
		return "", "", 0, false
	}
	j := strings.LastIndexByte(rest[:i], 0)
	if j < 0 {
		return "", "", 0, false
	}
	n, err := strconv.ParseInt(rest[i+1:], 10, 32)
	if err != nil || n < 0 {
		return "", "", 0, false
	}
	return rest[:j], rest[j+1 : i], int32(n), true
}

// appendState appends p's durable form.
func appendState(dst []byte, p *Partition) []byte {
	dst = append(dst, 1)
	dst = append(dst, p.TopicID[:]...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.start))
	at := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	runs := uint32(0)
	for i := 0; i < len(p.recs); {
		st, d := durableState(p.recs[i].state), p.recs[i].deliveries
		j := i + 1
		for j < len(p.recs) && durableState(p.recs[j].state) == st && p.recs[j].deliveries == d {
			j++
		}
		dst = binary.BigEndian.AppendUint64(dst, uint64(p.start+int64(i)))
		dst = binary.BigEndian.AppendUint32(dst, uint32(j-i))
		dst = append(dst, st)
		dst = binary.BigEndian.AppendUint16(dst, uint16(d))
		runs++
		i = j
	}
	binary.BigEndian.PutUint32(dst[at:], runs)
	return dst
}

// durableState is the state kept for st: a lock does not outlive the
// process.
func durableState(st uint8) uint8 {
	if st == stateAcquired {
		return stateAvailable
	}
	return st
}

// parseState reads a value appendState wrote. maxInFlight bounds the
// window it may describe, so a damaged value cannot allocate without
// bound.
func parseState(v []byte, maxInFlight int) (*Partition, error) {
	if len(v) < 1+16+8+4 || v[0] != 1 {
		return nil, errState
	}
	p := &Partition{}
	copy(p.TopicID[:], v[1:17])
	p.start = int64(binary.BigEndian.Uint64(v[17:25]))
	if p.start < 0 {
		return nil, errState
	}
	p.end = p.start
	runs := binary.BigEndian.Uint32(v[25:29])
	v = v[29:]
	if uint64(len(v)) != uint64(runs)*15 {
		return nil, errState
	}
	for range runs {
		first := int64(binary.BigEndian.Uint64(v))
		count := int64(binary.BigEndian.Uint32(v[8:]))
		st := v[12]
		d := int16(binary.BigEndian.Uint16(v[13:]))
		v = v[15:]
		if first != p.end || count <= 0 || st > stateArchived || st == stateAcquired || d < 0 ||
			int64(len(p.recs))+count > int64(maxInFlight) || p.end > math.MaxInt64-count {
			return nil, errState
		}
		for range count {
			p.recs = append(p.recs, record{state: st, deliveries: d})
		}
		p.end += count
	}
	return p, nil
}
