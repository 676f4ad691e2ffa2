package iggy

// Topic options (PROTOCOL.md 5.6): a TLV block, the codec of message user
// headers, with String keys. A create request carries it unprefixed at the
// end of the body; topic replies carry two blocks, each behind a u32
// length: the explicit options (what the creator sent) and the derived
// ones (what the server filled in from its defaults).
//
// The gateway sets only the storage knobs that decide what an
// acknowledged send survives. They are fixed when the topic is created:
// this server refuses them in UpdateTopic, which takes only
// compression_algorithm, message_expiry and max_topic_size.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/iggy-kafka/gateway/bridge"
)

// Topic option keys the gateway reads or writes.
const (
	OptEnforceFsync           = "enforce_fsync"
	OptMessagesRequiredToSave = "messages_required_to_save"
	OptSizeRequiredToSave     = "size_of_messages_required_to_save"
)

// Server defaults for a topic created without these keys (server
// 0.9.0-edge.5; they also come back in the derived block).
const (
	DefaultEnforceFsync           = false
	DefaultMessagesRequiredToSave = 1024
)

// Durability is how a topic's partitions persist a committed send before
// the server answers it.
type Durability struct {
	// EnforceFsync: the segment and index files are fsynced when the
	// journal is persisted.
	EnforceFsync bool
	// MessagesRequiredToSave: the journal is persisted to the segment
	// files once it holds this many messages (1: on every commit). Until
	// then the messages are only in the server's memory.
	MessagesRequiredToSave uint32
}

// DurabilityFor is the topic setting that keeps the gateway's --fsync
// promise on Iggy (docs/STORAGE.md):
//
//   - always: persisted and fsynced on every commit, before the answer:
//     survives a kill -9 of the server and a power loss.
//   - interval: persisted (written to the page cache) on every commit, no
//     fsync: survives a kill -9 of the server, not a power loss.
//   - never: the server's defaults: a kill -9 of the server loses what the
//     journal held (up to 1024 messages or 1 MiB per partition).
func DurabilityFor(policy string) (Durability, error) {
	switch policy {
	case "always":
		return Durability{EnforceFsync: true, MessagesRequiredToSave: 1}, nil
	case "interval":
		return Durability{EnforceFsync: false, MessagesRequiredToSave: 1}, nil
	case "never":
		return Durability{EnforceFsync: DefaultEnforceFsync, MessagesRequiredToSave: DefaultMessagesRequiredToSave}, nil
	}
	return Durability{}, fmt.Errorf("iggy: unknown fsync policy %q (always, interval, never)", policy)
}

// Keeps reports whether a topic with durability d keeps the promise of
// want: it persists at least as often, and fsyncs if want does.
func (d Durability) Keeps(want Durability) bool {
	if want.EnforceFsync && !d.EnforceFsync {
		return false
	}
	return d.MessagesRequiredToSave != 0 && d.MessagesRequiredToSave <= want.MessagesRequiredToSave
}

func (d Durability) String() string {
	return fmt.Sprintf("enforce_fsync=%t messages_required_to_save=%d", d.EnforceFsync, d.MessagesRequiredToSave)
}

// appendDurability appends d as create-time topic options.
func appendDurability(dst []byte, d Durability) []byte {
	dst = appendOption(dst, OptEnforceFsync, bridge.KindBool, []byte{boolByte(d.EnforceFsync)})
	return appendOption(dst, OptMessagesRequiredToSave, bridge.KindUint32, le.AppendUint32(nil, d.MessagesRequiredToSave))
}

func appendOption(dst []byte, key string, kind bridge.HeaderKind, value []byte) []byte {
	out, err := bridge.AppendUserHeader(dst, bridge.KindString, []byte(key), kind, value)
	if err != nil {
		panic("iggy: option " + key + " does not encode") // constant keys and fixed-width values
	}
	return out
}

// Durability reads the topic's effective durability from its option
// blocks, explicit entries first. ok is false when the blocks are absent
// (a topic decoded from a header that carries none) or unreadable.
func (t *Topic) Durability() (d Durability, ok bool) {
	d = Durability{EnforceFsync: DefaultEnforceFsync, MessagesRequiredToSave: DefaultMessagesRequiredToSave}
	if len(t.Options) == 0 && len(t.DerivedOptions) == 0 {
		return d, false
	}
	var seenFsync, seenSave bool
	for _, block := range [][]byte{t.Options, t.DerivedOptions} {
		it := bridge.NewUserHeaderIter(block)
		for it.Next() {
			switch string(it.Key()) {
			case OptEnforceFsync:
				if v, ok := optionBool(it.ValueKind(), it.Value()); ok && !seenFsync {
					d.EnforceFsync, seenFsync = v, true
				}
			case OptMessagesRequiredToSave:
				if v, ok := optionUint(it.ValueKind(), it.Value()); ok && !seenSave && v <= 1<<32-1 {
					d.MessagesRequiredToSave, seenSave = uint32(v), true
				}
			}
		}
		if it.Err() != nil {
			return d, false
		}
	}
	return d, seenFsync && seenSave
}

// optionBool reads a Bool option, or the strings "true"/"false" the
// server also accepts.
func optionBool(k bridge.HeaderKind, v []byte) (bool, bool) {
	switch k {
	case bridge.KindBool:
		return len(v) == 1 && v[0] != 0, len(v) == 1
	case bridge.KindString:
		b, err := strconv.ParseBool(string(v))
		return b, err == nil
	}
	return false, false
}

// optionUint reads an unsigned option of any width, or a decimal string.
func optionUint(k bridge.HeaderKind, v []byte) (uint64, bool) {
	switch {
	case k == bridge.KindUint8 && len(v) == 1:
		return uint64(v[0]), true
	case k == bridge.KindUint16 && len(v) == 2:
		return uint64(binary.LittleEndian.Uint16(v)), true
	case k == bridge.KindUint32 && len(v) == 4:
		return uint64(le.Uint32(v)), true
	case k == bridge.KindUint64 && len(v) == 8:
		return le.Uint64(v), true
	case k == bridge.KindString:
		n, err := strconv.ParseUint(string(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// WeakTopic is an existing topic whose storage settings cannot keep the
// durability the gateway was asked for.
type WeakTopic struct {
	Stream, Topic string
	Has           Durability
	Known         bool // false: the server did not report the settings
}

// WeakTopics lists the topics of streams whose durability does not keep
// want. They were created before (or by someone other than) this gateway
// with weaker settings, which Iggy cannot change afterwards: UpdateTopic
// refuses enforce_fsync and messages_required_to_save.
func (s *Store) WeakTopics(ctx context.Context, want Durability, streams ...string) ([]WeakTopic, error) {
	var out []WeakTopic
	for _, st := range streams {
		ts, err := s.c.GetTopics(ctx, Name(st))
		if err != nil {
			return nil, err
		}
		for i := range ts {
			d, ok := ts[i].Durability()
			if !ok || !d.Keeps(want) {
				out = append(out, WeakTopic{Stream: st, Topic: ts[i].Name, Has: d, Known: ok})
			}
		}
	}
	return out, nil
}

// TopicOption is one entry of a topic options block (PROTOCOL.md 5.6): a
// String key and a typed value, in the user-header TLV codec.
type TopicOption struct {
	Key   string
	Kind  bridge.HeaderKind
	Value []byte
}

// Topic option constructors, in the kinds the server stores each key
// under (its canonical kinds): compression_algorithm is a String name,
// the sizes and message_expiry Uint64, messages_required_to_save Uint32,
// the flags Bool. The server also accepts String values for every key and
// parses them ("7 days", "1 GiB", "true").
func OptUint64(key string, v uint64) TopicOption {
	return TopicOption{Key: key, Kind: bridge.KindUint64, Value: le.AppendUint64(nil, v)}
}

// OptUint32 is a Uint32 option.
func OptUint32(key string, v uint32) TopicOption {
	return TopicOption{Key: key, Kind: bridge.KindUint32, Value: le.AppendUint32(nil, v)}
}

// OptBool is a Bool option.
func OptBool(key string, v bool) TopicOption {
	return TopicOption{Key: key, Kind: bridge.KindBool, Value: []byte{boolByte(v)}}
}

// OptString is a String option.
func OptString(key, v string) TopicOption {
	return TopicOption{Key: key, Kind: bridge.KindString, Value: []byte(v)}
}

// Option keys beyond the durability ones (the server's topic catalog).
const (
	OptCompression       = "compression_algorithm"
	OptMessageExpiry     = "message_expiry"
	OptMaxTopicSize      = "max_topic_size"
	OptSegmentSize       = "segment_size"
	OptPreallocateSegmts = "preallocate_segments"
)

// AppendTopicOptions appends opts as an unprefixed options block. Keys
// must be 1..255 bytes and values 1..255 bytes (the codec's bounds).
func AppendTopicOptions(dst []byte, opts []TopicOption) ([]byte, error) {
	for _, o := range opts {
		var err error
		if dst, err = bridge.AppendUserHeader(dst, bridge.KindString, []byte(o.Key), o.Kind, o.Value); err != nil {
			return nil, fmt.Errorf("iggy: topic option %q: %w", o.Key, err)
		}
	}
	return dst, nil
}

// ParseTopicOptions decodes an options block (a topic reply's explicit or
// derived block) into entries that do not alias block. A malformed block
// is an error, never a panic; the entry count is bounded by the block.
func ParseTopicOptions(block []byte) ([]TopicOption, error) {
	var out []TopicOption
	it := bridge.NewUserHeaderIter(block)
	for it.Next() {
		if it.KeyKind() != bridge.KindString {
			return nil, fmt.Errorf("%w: topic option key of kind %d", ErrProtocol, it.KeyKind())
		}
		out = append(out, TopicOption{Key: string(it.Key()), Kind: it.ValueKind(), Value: append([]byte(nil), it.Value()...)})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("%w: topic options: %v", ErrProtocol, err)
	}
	return out, nil
}

// String renders an option as key=value, the value by its kind.
func (o TopicOption) String() string {
	switch {
	case o.Kind == bridge.KindString:
		return fmt.Sprintf("%s=%q", o.Key, o.Value)
	case o.Kind == bridge.KindBool && len(o.Value) == 1:
		return fmt.Sprintf("%s=%t", o.Key, o.Value[0] != 0)
	}
	if v, ok := optionUint(o.Kind, o.Value); ok {
		return fmt.Sprintf("%s=%d(kind %d)", o.Key, v, o.Kind)
	}
	return fmt.Sprintf("%s=%x(kind %d)", o.Key, o.Value, o.Kind)
}
