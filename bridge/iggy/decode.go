package iggy

import (
	"fmt"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// Reply payload decoders (PROTOCOL.md 6). Each checks every length against
// the payload, so a corrupt reply is an error and never a panic or an
// allocation sized by the peer.

func short(what string) error { return fmt.Errorf("%w: truncated %s", ErrProtocol, what) }

// LoginReply is the payload of a successful LoginRegister.
type LoginReply struct {
	UserID                uint32
	Session               uint64
	ServerProtocolVersion uint32
	ServerVersion         string
}

func decodeLogin(b []byte) (LoginReply, error) {
	rd := wire.NewReader(b)
	l := LoginReply{UserID: rd.U32(), Session: rd.U64(), ServerProtocolVersion: rd.U32(), ServerVersion: rd.Name()}
	if rd.Failed() {
		return LoginReply{}, short("login reply")
	}
	if l.Session == 0 {
		return LoginReply{}, fmt.Errorf("%w: login granted session 0", ErrProtocol)
	}
	return l, nil
}

// Stream is a stream record (GetStream, CreateStream).
type Stream struct {
	ID            uint32
	CreatedAt     uint64
	TopicsCount   uint32
	SizeBytes     uint64
	MessagesCount uint64
	Name          string
	Topics        []Topic // GetStream only; headers without partitions
}

func decodeStream(b []byte) (Stream, error) {
	rd := wire.NewReader(b)
	s := Stream{ID: rd.U32(), CreatedAt: rd.U64(), TopicsCount: rd.U32(), SizeBytes: rd.U64(), MessagesCount: rd.U64(), Name: rd.Name()}
	_ = rd.Bytes32() // options
	if rd.Failed() {
		return Stream{}, short("stream")
	}
	for i := uint32(0); i < s.TopicsCount && rd.Len() > 0; i++ {
		t, err := readTopicHeader(rd)
		if err != nil {
			return Stream{}, err
		}
		s.Topics = append(s.Topics, t)
	}
	return s, nil
}

// Topic is a topic header and, from GetTopic/CreateTopic, its partitions.
type Topic struct {
	ID              uint32
	CreatedAt       uint64
	PartitionsCount uint32
	MessageExpiry   uint64
	Compression     uint8
	MaxTopicSize    uint64
	SizeBytes       uint64
	MessagesCount   uint64
	Name            string
	Options         []byte // explicit options TLV, aliasing the reply
	DerivedOptions  []byte // derived options TLV, aliasing the reply
	Partitions      []Partition
}

// Partition is a 40-byte partition record.
type Partition struct {
	ID            uint32
	CreatedAt     uint64
	SegmentsCount uint32
	CurrentOffset uint64 // offset of the LAST message; 0 when empty
	SizeBytes     uint64
	MessagesCount uint64
}

// State converts Iggy's last-offset view into [Earliest, Next).
// messages_count tells an empty partition from one holding offset 0, and
// it drops when retention deletes segments (always a prefix), so
// Next-messages_count is the first retained offset.
func (p Partition) State() bridge.PartitionState {
	if p.MessagesCount == 0 {
		if p.CurrentOffset == 0 {
			return bridge.PartitionState{}
		}
		// Everything written was deleted (purge): nothing below the
		// last offset is readable.
		return bridge.PartitionState{Earliest: p.CurrentOffset + 1, Next: p.CurrentOffset + 1}
	}
	next := p.CurrentOffset + 1
	earliest := uint64(0)
	if p.MessagesCount < next {
		earliest = next - p.MessagesCount
	}
	return bridge.PartitionState{Earliest: earliest, Next: next}
}

const partitionRecordSize = 40

func readTopicHeader(rd *wire.Reader) (Topic, error) {
	t := Topic{
		ID: rd.U32(), CreatedAt: rd.U64(), PartitionsCount: rd.U32(), MessageExpiry: rd.U64(),
		Compression: rd.U8(), MaxTopicSize: rd.U64(), SizeBytes: rd.U64(), MessagesCount: rd.U64(),
		Name: rd.Name(),
	}
	t.Options = rd.Bytes32()
	t.DerivedOptions = rd.Bytes32()
	if rd.Failed() {
		return Topic{}, short("topic header")
	}
	return t, nil
}

// decodeTopic reads a topic header followed by its partition records.
func decodeTopic(b []byte) (Topic, error) {
	rd := wire.NewReader(b)
	t, err := readTopicHeader(rd)
	if err != nil {
		return Topic{}, err
	}
	if uint64(t.PartitionsCount)*partitionRecordSize > uint64(rd.Len()) {
		return Topic{}, short("partition records")
	}
	t.Partitions = make([]Partition, t.PartitionsCount)
	for i := range t.Partitions {
		t.Partitions[i] = Partition{ID: rd.U32(), CreatedAt: rd.U64(), SegmentsCount: rd.U32(), CurrentOffset: rd.U64(), SizeBytes: rd.U64(), MessagesCount: rd.U64()}
	}
	return t, nil
}

// decodeTopics reads GetTopics: u32 count then topic headers.
func decodeTopics(b []byte) ([]Topic, error) {
	rd := wire.NewReader(b)
	n := rd.U32()
	if rd.Failed() {
		return nil, short("topic list")
	}
	// A header is at least 58 bytes: do not trust n for the allocation.
	ts := make([]Topic, 0, min(int(n), rd.Len()/58))
	for i := uint32(0); i < n; i++ {
		t, err := readTopicHeader(rd)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// SendConfirmation is one entry of a SendMessages reply.
type SendConfirmation struct {
	StreamID, TopicID, PartitionID uint32
	BaseOffset                     uint64
}

const confirmationSize = 20

// decodeSendReply reads u32 count then 20-byte confirmations. An empty body
// is the shape the server sends for a dead session: an error.
func decodeSendReply(b []byte) ([]SendConfirmation, error) {
	if len(b) == 0 {
		return nil, errUnexpectedEmptySendBody
	}
	rd := wire.NewReader(b)
	n := rd.U32()
	if rd.Failed() || uint64(n)*confirmationSize != uint64(rd.Len()) {
		return nil, short("send confirmations")
	}
	cs := make([]SendConfirmation, n)
	for i := range cs {
		cs[i] = SendConfirmation{StreamID: rd.U32(), TopicID: rd.U32(), PartitionID: rd.U32(), BaseOffset: rd.U64()}
	}
	return cs, nil
}

// PollHead is the fixed part of a PollMessages reply.
type PollHead struct {
	PartitionID   uint32 // 0xFFFFFFFF: group re-sync sentinel
	CurrentOffset uint64 // last committed offset of the partition
	Count         uint32 // messages over all records
}

// ResyncSentinel is the partition id of an empty group poll on a
// partition the member no longer owns.
const ResyncSentinel = 0xFFFFFFFF

// decodePoll reads the head and calls fn with each stored batch record
// (256-byte batch header + frames, checked with bridge.ParseIggyBatch).
// It stops early when fn returns false. The record slices alias b.
func decodePoll(b []byte, fn func(record []byte) bool) (PollHead, error) {
	rd := wire.NewReader(b)
	h := PollHead{PartitionID: rd.U32(), CurrentOffset: rd.U64(), Count: rd.U32()}
	if rd.Failed() {
		return PollHead{}, short("poll head")
	}
	rest := rd.Rest()
	seen := uint64(0)
	for len(rest) > 0 {
		v, err := bridge.ParseIggyBatch(rest)
		if err != nil {
			return h, fmt.Errorf("%w: poll record: %v", ErrProtocol, err)
		}
		seen += uint64(v.Count)
		rec := rest[:v.Length:v.Length]
		rest = rest[v.Length:]
		if fn != nil && !fn(rec) {
			return h, nil
		}
	}
	if seen != uint64(h.Count) {
		return h, fmt.Errorf("%w: poll reply counts %d messages, records hold %d", ErrProtocol, h.Count, seen)
	}
	return h, nil
}

// ConsumerOffset is a GetConsumerOffset reply.
type ConsumerOffset struct {
	PartitionID   uint32
	CurrentOffset uint64 // last offset in the partition
	StoredOffset  uint64 // last offset the consumer stored
}

// decodeConsumerOffset: an empty body means no offset stored (ok=false).
func decodeConsumerOffset(b []byte) (ConsumerOffset, bool, error) {
	if len(b) == 0 {
		return ConsumerOffset{}, false, nil
	}
	rd := wire.NewReader(b)
	o := ConsumerOffset{PartitionID: rd.U32(), CurrentOffset: rd.U64(), StoredOffset: rd.U64()}
	if rd.Failed() {
		return ConsumerOffset{}, false, short("consumer offset")
	}
	return o, true, nil
}
