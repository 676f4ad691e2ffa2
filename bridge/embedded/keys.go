package embedded

// Key layout (docs/STORAGE.md). One keyspace, split by a one-byte prefix so
// the catalog, the counter and the log starts never interleave:
//
//	'c' u8 len(stream) stream topic        -> catalog entry (topicValue)
//	'n'                                    -> next topic id, u32 BE
//	'l' u32 BE topic id, u32 BE partition  -> log start offset, u64 BE (DeleteRecords, retention)
//	'd' u32 BE topic id, u32 BE partition, u64 BE base offset -> stamped Iggy batch,
//	    written by versions before the segment logs; only read, to move
//	    them into the logs at Open (migrate.go)
//
// Big-endian numbers make pebble's byte order the numeric order, so one
// partition's old batches are contiguous and sorted by offset.

import (
	"encoding/binary"
	"errors"

	"github.com/iggy-kafka/gateway/bridge"
)

const (
	prefixCatalog = 'c'
	prefixCounter = 'n'
	prefixData    = 'd'
	prefixStart   = 'l'
)

// dataKeyLen is the length of a data key.
const dataKeyLen = 1 + 4 + 4 + 8

var be = binary.BigEndian

var counterKey = []byte{prefixCounter}

// catalogKey is the catalog key of stream/topic. The length byte keeps
// ("ab","c") and ("a","bc") apart and makes a stream's topics one range.
func catalogKey(stream, topic string) []byte {
	k := catalogStreamPrefix(stream)
	return append(k, topic...)
}

// catalogStreamPrefix is the common prefix of a stream's catalog keys.
func catalogStreamPrefix(stream string) []byte {
	k := make([]byte, 0, 2+len(stream)+64)
	k = append(k, prefixCatalog, byte(len(stream)))
	return append(k, stream...)
}

// parseCatalogKey splits a catalog key back into stream and topic.
func parseCatalogKey(k []byte) (stream, topic string, err error) {
	if len(k) < 2 || k[0] != prefixCatalog || len(k) < 2+int(k[1]) {
		return "", "", errCorrupt
	}
	n := 2 + int(k[1])
	return string(k[2:n]), string(k[n:]), nil
}

// topicValue is the catalog value: id u32, partitions u32, created µs u64,
// then, when the topic has configs, their encoding
// (bridge.AppendTopicConfigs). An entry written before configs existed is
// the 16 bytes alone: a topic with none.
func topicValue(id uint32, partitions int32, created uint64, cfg bridge.TopicConfigs) ([]byte, error) {
	v := make([]byte, 16, 64)
	be.PutUint32(v[0:], id)
	be.PutUint32(v[4:], uint32(partitions))
	be.PutUint64(v[8:], created)
	if len(cfg) == 0 {
		return v, nil
	}
	return bridge.AppendTopicConfigs(v, cfg)
}

func parseTopicValue(v []byte) (id uint32, partitions int32, created uint64, cfg bridge.TopicConfigs, err error) {
	if len(v) < 16 {
		return 0, 0, 0, nil, errCorrupt
	}
	if len(v) > 16 {
		var rest []byte
		if cfg, rest, err = bridge.ParseTopicConfigs(v[16:]); err != nil || len(rest) != 0 {
			return 0, 0, 0, nil, errCorrupt
		}
	}
	return be.Uint32(v[0:]), int32(be.Uint32(v[4:])), be.Uint64(v[8:]), cfg, nil
}

// putDataKey writes the data key of (topic, partition, offset) into k,
// which must be dataKeyLen long.
func putDataKey(k []byte, topic uint32, partition uint32, offset uint64) {
	k[0] = prefixData
	be.PutUint32(k[1:], topic)
	be.PutUint32(k[5:], partition)
	be.PutUint64(k[9:], offset)
}

func dataKey(topic uint32, partition uint32, offset uint64) []byte {
	k := make([]byte, dataKeyLen)
	putDataKey(k, topic, partition, offset)
	return k
}

// partitionBounds are the keys bracketing a partition's batches: every
// batch key k has lo <= k < hi.
func partitionBounds(topic, partition uint32) (lo, hi []byte) {
	lo = dataKey(topic, partition, 0)
	hi = make([]byte, 1+4+4)
	hi[0] = prefixData
	be.PutUint32(hi[1:], topic)
	// partition+1 overflows only for partition 2^32-1, which CreateTopic
	// never makes.
	be.PutUint32(hi[5:], partition+1)
	return lo, hi
}

// logStartKey is the key of a partition's log start offset.
func logStartKey(topic, partition uint32) []byte {
	k := make([]byte, 9)
	k[0] = prefixStart
	be.PutUint32(k[1:], topic)
	be.PutUint32(k[5:], partition)
	return k
}

// logStartBounds bracket the log start keys of one topic's partitions
// from partition from on, for DeleteRange.
func logStartBounds(topic, from uint32) (lo, hi []byte) {
	lo = logStartKey(topic, from)
	hi = []byte{prefixStart, 0, 0, 0, 0}
	be.PutUint32(hi[1:], topic+1)
	if topic == ^uint32(0) {
		hi = []byte{prefixStart + 1}
	}
	return lo, hi
}

// offsetOfKey reads the base offset out of a data key.
func offsetOfKey(k []byte) uint64 { return be.Uint64(k[9:]) }

var errCorrupt = errors.New("embedded: corrupt catalog entry")
