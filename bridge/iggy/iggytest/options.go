package iggytest

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

func isUTF8(s string) bool { return utf8.ValidString(s) }

// Topic options as server 0.9.0-edge.5 handles them (PROTOCOL.md 5.6;
// the server's TopicCreateOptions): eight catalog keys, each value in its
// canonical kind or as a String the server parses. CreateTopic checks and
// re-encodes the block: explicit entries come back in canonical kinds,
// a value equal to the "server default" sentinel (0 for message_expiry,
// max_topic_size, segment_size, size_of_messages_required_to_save) is
// dropped from the explicit block, and every key the client did not set
// is filled in from the defaults as a derived entry. UpdateTopic takes
// only the three updatable keys and stores the client's bytes as sent.

// Status codes of option checks.
const (
	statusInvalidCommandCode    = wire.StatusInvalidCommand
	statusTooManyPartitionsCode = wire.StatusTooManyPartitions
	statusInvalidOptionValue    = 4042
	statusInvalidTopicSize      = 1019
	statusPartitionsTooMany     = 2019 // DeletePartitions of more than exist
)

const (
	keyCompression   = "compression_algorithm"
	keyExpiry        = "message_expiry"
	keyMaxSize       = "max_topic_size"
	keySegment       = "segment_size"
	keyFsync         = "enforce_fsync"
	keyMsgsToSave    = "messages_required_to_save"
	keySizeToSave    = "size_of_messages_required_to_save"
	keyPreallocate   = "preallocate_segments"
	defaultSegment   = 1 << 30
	minSegment       = 1 << 20
	maxSegment       = 1 << 30
	maxMsgsToSave    = 16 << 20
	maxSizeToSave    = 1 << 30
	maxPreallocBytes = 64 << 30
	compressionNone  = 1
	compressionGzip  = 2
)

var updatableKeys = map[string]bool{keyCompression: true, keyExpiry: true, keyMaxSize: true}

// optEntry is one stored option.
type optEntry struct {
	kind     bridge.HeaderKind
	value    []byte
	explicit bool
}

// topicOpts is a parsed block: a nil field was absent (or the sentinel).
type topicOpts struct {
	compression          *uint8
	expiry, maxSize      *uint64
	segment, sizeToSave  *uint64
	fsync, preallocate   *bool
	msgsToSave           *uint32
	order                []string // keys as sent, for UpdateTopic
	raw                  map[string]optEntry
	segmentOrDefault     uint64
	preallocateOrDefault bool
}

// parseOptions reads a block entry by entry; the first bad entry decides
// the status: a key outside allowed is 4041, a value of the wrong kind or
// out of range 4042. A block that does not decode (or repeats a key) is 3.
func parseOptions(block []byte, allowed func(string) bool) (*topicOpts, uint32) {
	o := &topicOpts{raw: map[string]optEntry{}}
	it := bridge.NewUserHeaderIter(block)
	for it.Next() {
		key := string(it.Key())
		if it.KeyKind() != bridge.KindString || !isUTF8(key) {
			return nil, statusInvalidCommandCode
		}
		if _, dup := o.raw[key]; dup {
			return nil, statusInvalidCommandCode
		}
		o.raw[key] = optEntry{kind: it.ValueKind(), value: append([]byte(nil), it.Value()...), explicit: true}
		o.order = append(o.order, key)
	}
	if it.Err() != nil {
		return nil, statusInvalidCommandCode
	}
	for _, key := range o.order {
		if !allowed(key) {
			return nil, statusUnsupportedOptionKey
		}
		if !o.absorb(key, o.raw[key]) {
			return nil, statusInvalidOptionValue
		}
	}
	o.segmentOrDefault = defaultSegment
	if o.segment != nil {
		o.segmentOrDefault = *o.segment
	}
	o.preallocateOrDefault = o.preallocate != nil && *o.preallocate
	return o, 0
}

func isCatalogKey(k string) bool { return knownTopicOption[k] }

func isUpdatableKey(k string) bool { return updatableKeys[k] }

// absorb parses one value into its field; false: invalid value.
func (o *topicOpts) absorb(key string, e optEntry) bool {
	switch key {
	case keyCompression:
		c, ok := parseCompression(e)
		o.compression = &c
		return ok
	case keyExpiry:
		return absorbU64(&o.expiry, e, parseExpiry)
	case keyMaxSize:
		return absorbU64(&o.maxSize, e, parseMaxSize)
	case keySegment:
		return absorbU64(&o.segment, e, parseByteSize)
	case keySizeToSave:
		return absorbU64(&o.sizeToSave, e, parseByteSize) && orU64(o.sizeToSave, 0) <= maxSizeToSave
	case keyFsync:
		b, ok := parseBool(e)
		o.fsync = &b
		return ok
	case keyPreallocate:
		b, ok := parseBool(e)
		o.preallocate = &b
		return ok
	case keyMsgsToSave:
		v, ok := parseU32(e)
		o.msgsToSave = &v
		return ok && v != 0 && v <= maxMsgsToSave
	}
	return false
}

// checkCreate applies the create-time bounds after parsing, in the
// server's order: segment size, preallocation budget, partition count,
// topic size floor.
func (o *topicOpts) checkCreate(partitions uint32) uint32 {
	if o.segment != nil && (*o.segment < minSegment || *o.segment > maxSegment || *o.segment%512 != 0) {
		return statusInvalidOptionValue
	}
	if o.preallocateOrDefault && o.segmentOrDefault*uint64(partitions) > maxPreallocBytes {
		return statusInvalidOptionValue
	}
	if partitions > 1000 {
		return statusTooManyPartitionsCode
	}
	if o.maxSize != nil && *o.maxSize < o.segmentOrDefault {
		return statusInvalidTopicSize
	}
	return 0
}

// createdOptions is the stored option map of a new topic: explicit
// entries re-encoded in canonical kinds, derived ones from the defaults.
func (o *topicOpts) createdOptions() map[string]optEntry {
	m := map[string]optEntry{}
	put := func(key string, set bool, kind bridge.HeaderKind, v []byte) {
		m[key] = optEntry{kind: kind, value: v, explicit: set}
	}
	comp := uint8(compressionNone)
	if o.compression != nil {
		comp = *o.compression
	}
	put(keyCompression, o.compression != nil, bridge.KindString, []byte(compressionName(comp)))
	put(keyExpiry, o.expiry != nil, bridge.KindUint64, le.AppendUint64(nil, orU64(o.expiry, math.MaxUint64)))
	put(keyMaxSize, o.maxSize != nil, bridge.KindUint64, le.AppendUint64(nil, orU64(o.maxSize, math.MaxUint64)))
	put(keySegment, o.segment != nil, bridge.KindUint64, le.AppendUint64(nil, o.segmentOrDefault))
	put(keyFsync, o.fsync != nil, bridge.KindBool, []byte{boolByte(o.fsync != nil && *o.fsync)})
	msgs := uint32(1024)
	if o.msgsToSave != nil {
		msgs = *o.msgsToSave
	}
	put(keyMsgsToSave, o.msgsToSave != nil, bridge.KindUint32, le.AppendUint32(nil, msgs))
	put(keySizeToSave, o.sizeToSave != nil, bridge.KindUint64, le.AppendUint64(nil, orU64(o.sizeToSave, 1<<20)))
	put(keyPreallocate, o.preallocate != nil, bridge.KindBool, []byte{boolByte(o.preallocateOrDefault)})
	return m
}

// defaultOptions is the map of a topic created without options.
func defaultOptions() map[string]optEntry {
	o, _ := parseOptions(nil, isCatalogKey)
	return o.createdOptions()
}

// appendOptionBlocks writes the explicit and the derived block, each
// behind a u32 length, keys in byte order (the server keeps a BTreeMap).
func appendOptionBlocks(b []byte, m map[string]optEntry) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, explicit := range []bool{true, false} {
		var block []byte
		for _, k := range keys {
			if e := m[k]; e.explicit == explicit {
				block, _ = bridge.AppendUserHeader(block, bridge.KindString, []byte(k), e.kind, e.value)
			}
		}
		b = le.AppendUint32(b, uint32(len(block)))
		b = append(b, block...)
	}
	return b
}

func orU64(p *uint64, d uint64) uint64 {
	if p == nil {
		return d
	}
	return *p
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func compressionName(c uint8) string {
	if c == compressionGzip {
		return "gzip"
	}
	return "none"
}

func parseCompression(e optEntry) (uint8, bool) {
	switch e.kind {
	case bridge.KindUint8:
		if len(e.value) == 1 && (e.value[0] == compressionNone || e.value[0] == compressionGzip) {
			return e.value[0], true
		}
	case bridge.KindString:
		switch strings.ToLower(string(e.value)) {
		case "none":
			return compressionNone, true
		case "gzip":
			return compressionGzip, true
		}
	}
	return 0, false
}

func parseBool(e optEntry) (bool, bool) {
	switch e.kind {
	case bridge.KindBool:
		if len(e.value) == 1 && e.value[0] <= 1 {
			return e.value[0] == 1, true
		}
	case bridge.KindString:
		switch string(e.value) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func parseU32(e optEntry) (uint32, bool) {
	switch e.kind {
	case bridge.KindUint32:
		if len(e.value) == 4 {
			return le.Uint32(e.value), true
		}
	case bridge.KindString:
		n, err := strconv.ParseUint(string(e.value), 10, 32)
		return uint32(n), err == nil
	}
	return 0, false
}

// parseU64Or reads a Uint64 as is, or a String through parse.
// absorbU64 parses a u64 option into *dst; 0 (the server's default)
// leaves *dst as it is.
func absorbU64(dst **uint64, e optEntry, parse func(string) (uint64, bool)) bool {
	v, ok := parseU64Or(e, parse)
	if v != 0 {
		*dst = &v
	}
	return ok
}

func parseU64Or(e optEntry, parse func(string) (uint64, bool)) (uint64, bool) {
	switch e.kind {
	case bridge.KindUint64:
		if len(e.value) == 8 {
			return le.Uint64(e.value), true
		}
	case bridge.KindString:
		return parse(string(e.value))
	}
	return 0, false
}

// parseExpiry reads an expiry string in µs: "none"/"unlimited" is never
// (u64 max), "server_default" the sentinel 0, else a duration such as
// "1h", "7 days" or "1h 30m" (at most u32::MAX seconds).
func parseExpiry(s string) (uint64, bool) {
	switch s {
	case "unlimited", "none", "None", "Unlimited", "never_expire":
		return math.MaxUint64, true
	case "default", "server_default", "Default", "Server_default":
		return 0, true
	}
	us, ok := parseDuration(s)
	return us, ok && us/1_000_000 <= math.MaxUint32
}

var durationUnits = map[string]uint64{
	"us": 1, "usec": 1, "ms": 1_000, "msec": 1_000,
	"s": 1_000_000, "sec": 1_000_000, "secs": 1_000_000, "second": 1_000_000, "seconds": 1_000_000,
	"m": 60_000_000, "min": 60_000_000, "mins": 60_000_000, "minute": 60_000_000, "minutes": 60_000_000,
	"h": 3_600_000_000, "hr": 3_600_000_000, "hrs": 3_600_000_000, "hour": 3_600_000_000, "hours": 3_600_000_000,
	"d": 86_400_000_000, "day": 86_400_000_000, "days": 86_400_000_000,
	"w": 604_800_000_000, "week": 604_800_000_000, "weeks": 604_800_000_000,
}

// parseDuration reads humantime-style "<n><unit>" groups, spaces allowed.
func parseDuration(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var total uint64
	for s != "" {
		n, rest, ok := cutNumber(s)
		if !ok {
			return 0, false
		}
		s = strings.TrimLeft(rest, " ")
		j := 0
		for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		unit, ok := durationUnits[s[:j]]
		if !ok || n > math.MaxUint64/unit {
			return 0, false
		}
		total += n * unit
		s = strings.TrimLeft(s[j:], " ")
	}
	return total, true
}

// parseMaxSize: "unlimited" is u64 max, "0"/"server_default" the
// sentinel, else a byte size.
func parseMaxSize(s string) (uint64, bool) {
	switch s {
	case "unlimited":
		return math.MaxUint64, true
	case "0", "server_default":
		return 0, true
	}
	return parseByteSize(s)
}

var byteUnits = map[string]uint64{
	"": 1, "b": 1, "kb": 1_000, "mb": 1_000_000, "gb": 1_000_000_000, "tb": 1_000_000_000_000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseByteSize reads "<n> <unit>" with decimal (kB, MB, GB) or binary
// (KiB, MiB, GiB) units, case-insensitively.
func parseByteSize(s string) (uint64, bool) {
	n, rest, ok := cutNumber(strings.TrimSpace(s))
	if !ok {
		return 0, false
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(rest))]
	if !ok || n > math.MaxUint64/unit {
		return 0, false
	}
	return n * unit, true
}

// cutNumber reads the decimal number that opens s (ok=false when there is
// none or it overflows a u64) and returns the rest of s.
func cutNumber(s string) (uint64, string, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	return n, s[i:], err == nil
}
