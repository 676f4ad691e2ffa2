package iggy

import (
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Request body encoders (PROTOCOL.md 5 and 6). Each appends to dst and
// returns it, so a body is written straight into the connection's frame
// buffer behind the 256-byte header.

var le = binary.LittleEndian

// ErrNameLength is returned for a name outside 1..255 bytes or not UTF-8.
var ErrNameLength = errors.New("iggy: name must be 1..255 bytes of UTF-8")

// Identifier names a stream, topic, group or user by number or by name
// (PROTOCOL.md 5.2).
type Identifier struct {
	name  string
	num   uint32
	named bool
}

// ID is a numeric identifier (0-based, server-assigned).
func ID(n uint32) Identifier { return Identifier{num: n} }

// Name is a string identifier.
func Name(s string) Identifier { return Identifier{name: s, named: true} }

// String prints the identifier for errors and logs.
func (id Identifier) String() string {
	if id.named {
		return id.name
	}
	return "#" + strconv.FormatUint(uint64(id.num), 10)
}

func (id Identifier) valid() bool {
	return !id.named || validName(id.name)
}

func appendIdentifier(dst []byte, id Identifier) []byte {
	if id.named {
		dst = append(dst, 2, byte(len(id.name)))
		return append(dst, id.name...)
	}
	dst = append(dst, 1, 4)
	return le.AppendUint32(dst, id.num)
}

// appendName appends a u8-length-prefixed string; callers check the length.
func appendName(dst []byte, s string) []byte {
	dst = append(dst, byte(len(s)))
	return append(dst, s...)
}

// validName is Iggy's name rule: 1..255 bytes of UTF-8. The UTF-8 check
// protects the server as well as the request: server 0.9.0-edge.5 admits a
// DeleteStream whose name is not UTF-8 to consensus and then panics
// applying it, which kills the whole server.
func validName(s string) bool { return len(s) >= 1 && len(s) <= 255 && utf8.ValidString(s) }

// Consumer kinds (PROTOCOL.md 5.3).
const (
	ConsumerKindConsumer = 1
	ConsumerKindGroup    = 2
)

// Consumer is who polls or owns an offset.
type Consumer struct {
	Kind uint8
	ID   Identifier
}

// PlainConsumer is a kind-1 consumer. A named one is hashed to a u32 by
// the server (xxHash32), so pick names that will not collide with ids.
func PlainConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerKindConsumer, ID: id} }

// GroupConsumer is a kind-2 consumer: a consumer group.
func GroupConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerKindGroup, ID: id} }

func appendConsumer(dst []byte, c Consumer) []byte {
	return appendIdentifier(append(dst, c.Kind), c.ID)
}

// Partitioning says where a send goes (PROTOCOL.md 5.4).
type Partitioning struct {
	Kind  uint8
	Value []byte
}

// Partitioning kinds.
const (
	PartitioningBalanced    = 1
	PartitioningPartitionID = 2
	PartitioningMessagesKey = 3
)

// Balanced lets the server pick a partition round robin.
func Balanced() Partitioning { return Partitioning{Kind: PartitioningBalanced} }

// PartitionID sends to one partition (0-based). The gateway always uses it.
func PartitionID(p uint32) Partitioning {
	return Partitioning{Kind: PartitioningPartitionID, Value: le.AppendUint32(nil, p)}
}

// MessagesKey lets the server hash key (1..255 bytes) to a partition.
func MessagesKey(key []byte) Partitioning {
	return Partitioning{Kind: PartitioningMessagesKey, Value: key}
}

func appendPartitioning(dst []byte, p Partitioning) []byte {
	dst = append(dst, p.Kind, byte(len(p.Value)))
	return append(dst, p.Value...)
}

// Polling strategy kinds (PROTOCOL.md 5.5).
const (
	PollOffset    = 1
	PollTimestamp = 2
	PollFirst     = 3
	PollLast      = 4
	PollNext      = 5
)

// PollingStrategy is where a poll starts.
type PollingStrategy struct {
	Kind  uint8
	Value uint64
}

// appendPartition writes the optional partition: flag then u32, with four
// zero bytes when absent.
func appendPartition(dst []byte, p *uint32) []byte {
	if p == nil {
		return append(dst, 0, 0, 0, 0, 0)
	}
	return le.AppendUint32(append(dst, 1), *p)
}

// appendLoginRegister writes a LoginRegister body (PROTOCOL.md 6.2).
func appendLoginRegister(dst []byte, sdk, sdkVersion, user, password string) []byte {
	dst = appendClientVersion(dst, sdk, sdkVersion)
	dst = appendName(dst, user)
	dst = appendName(dst, password)
	return le.AppendUint32(dst, 0) // no client context
}

// appendLoginRegisterWithPAT writes a LoginRegisterWithPat body (6.3).
func appendLoginRegisterWithPAT(dst []byte, sdk, sdkVersion, token string) []byte {
	dst = appendClientVersion(dst, sdk, sdkVersion)
	dst = appendName(dst, token)
	return le.AppendUint32(dst, 0)
}

// appendClientVersion writes the protocol-version prefix of a login body.
func appendClientVersion(dst []byte, sdk, sdkVersion string) []byte {
	dst = le.AppendUint32(dst, protocolVersion)
	dst = appendName(dst, sdk)
	return appendName(dst, sdkVersion)
}

// appendCreateStream: name, then an empty options block.
func appendCreateStream(dst []byte, name string) []byte { return appendName(dst, name) }

// appendCreateTopic: stream id, u32 partitions, name, empty options.
func appendCreateTopic(dst []byte, stream Identifier, partitions uint32, name string) []byte {
	dst = appendIdentifier(dst, stream)
	dst = le.AppendUint32(dst, partitions)
	return appendName(dst, name)
}

// appendTopicRef: stream id + topic id (GetTopic, DeleteTopic).
func appendTopicRef(dst []byte, stream, topic Identifier) []byte {
	return appendIdentifier(appendIdentifier(dst, stream), topic)
}

// appendPartitions: stream id + topic id + u32 count (Create/DeletePartitions).
func appendPartitions(dst []byte, stream, topic Identifier, count uint32) []byte {
	return le.AppendUint32(appendTopicRef(dst, stream, topic), count)
}

// sendPrefixLen is the body length before the batch: u32 metadata length
// plus the metadata itself.
func sendPrefixLen(stream, topic Identifier, p Partitioning) int {
	return 4 + identifierLen(stream) + identifierLen(topic) + 2 + len(p.Value) + 4
}

func identifierLen(id Identifier) int {
	if id.named {
		return 2 + len(id.name)
	}
	return 6
}

// appendSendPrefix writes everything of a SendMessages body before the
// 256-byte batch header: u32 metadata_length, stream, topic, partitioning,
// u32 messages_count (PROTOCOL.md 6.10).
func appendSendPrefix(dst []byte, stream, topic Identifier, p Partitioning, count uint32) []byte {
	meta := sendPrefixLen(stream, topic, p) - 4
	dst = le.AppendUint32(dst, uint32(meta))
	dst = appendTopicRef(dst, stream, topic)
	dst = appendPartitioning(dst, p)
	return le.AppendUint32(dst, count)
}

// PollRequest is the body of PollMessages (PROTOCOL.md 6.11).
type PollRequest struct {
	Consumer   Consumer
	Stream     Identifier
	Topic      Identifier
	Partition  *uint32 // nil: the server picks (partition 0 for a plain consumer)
	Strategy   PollingStrategy
	Count      uint32
	AutoCommit bool
}

func appendPoll(dst []byte, r *PollRequest) []byte {
	dst = appendConsumer(dst, r.Consumer)
	dst = appendTopicRef(dst, r.Stream, r.Topic)
	dst = appendPartition(dst, r.Partition)
	dst = append(dst, r.Strategy.Kind)
	dst = le.AppendUint64(dst, r.Strategy.Value)
	dst = le.AppendUint32(dst, r.Count)
	return append(dst, boolByte(r.AutoCommit))
}

// OffsetRef names one consumer's offset in one partition.
type OffsetRef struct {
	Consumer  Consumer
	Stream    Identifier
	Topic     Identifier
	Partition *uint32
}

func appendOffsetRef(dst []byte, r *OffsetRef) []byte {
	dst = appendConsumer(dst, r.Consumer)
	dst = appendTopicRef(dst, r.Stream, r.Topic)
	return appendPartition(dst, r.Partition)
}

// Ack levels of offset writes.
const (
	ackNone   = 0
	ackQuorum = 1 // replicated: what the official SDKs send
)

func appendStoreOffset(dst []byte, r *OffsetRef, offset uint64) []byte {
	dst = le.AppendUint64(appendOffsetRef(dst, r), offset)
	return append(dst, ackQuorum)
}

func appendDeleteOffset(dst []byte, r *OffsetRef) []byte {
	return append(appendOffsetRef(dst, r), ackQuorum)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
