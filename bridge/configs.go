package bridge

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// TopicConfigs are the Kafka topic configs set explicitly on one topic,
// name to value (cleanup.policy=compact, retention.ms=604800000). Configs
// not in the map have their defaults. The handlers decide which names and
// values are valid; a Backend keeps what it is given, or refuses a config
// it cannot keep with a *ConfigError.
type TopicConfigs map[string]string

// ErrConfigRefused matches every *ConfigError.
var ErrConfigRefused = errors.New("bridge: topic config refused")

// ConfigError is a config the Store cannot keep, named so the Kafka
// client's error message says which one.
type ConfigError struct {
	Name   string
	Reason string
}

func (e *ConfigError) Error() string { return "config " + e.Name + ": " + e.Reason }

// Is makes errors.Is(err, ErrConfigRefused) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfigRefused }

// Bounds of an encoded config set: Kafka config names are short ASCII and
// values are numbers or short lists; the caps keep one topic's entry small.
const (
	MaxTopicConfigs     = 256
	MaxTopicConfigBytes = 1024 // a name or a value
)

// AppendTopicConfigs appends cfg in the stores' encoding: u16 count, then
// per config, sorted by name, u16 name length, name, u16 value length,
// value (all big-endian). It fails over the bounds above.
func AppendTopicConfigs(dst []byte, cfg TopicConfigs) ([]byte, error) {
	if len(cfg) > MaxTopicConfigs {
		return nil, fmt.Errorf("bridge: %d topic configs, at most %d", len(cfg), MaxTopicConfigs)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(cfg)))
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[k]
		if len(k) == 0 || len(k) > MaxTopicConfigBytes || len(v) > MaxTopicConfigBytes {
			return nil, &ConfigError{Name: k, Reason: "name or value too long to keep"}
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
		dst = append(dst, k...)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
		dst = append(dst, v...)
	}
	return dst, nil
}

var errConfigEncoding = errors.New("bridge: corrupt topic config encoding")

// ParseTopicConfigs decodes what AppendTopicConfigs wrote and returns the
// bytes after it. The result does not alias b. A malformed encoding is an
// error, never a panic; memory is bounded by len(b).
func ParseTopicConfigs(b []byte) (TopicConfigs, []byte, error) {
	if len(b) < 2 {
		return nil, nil, errConfigEncoding
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > MaxTopicConfigs {
		return nil, nil, errConfigEncoding
	}
	cfg := make(TopicConfigs, n)
	field := func() (string, bool) {
		if len(b) < 2 {
			return "", false
		}
		l := int(binary.BigEndian.Uint16(b))
		if l > MaxTopicConfigBytes || len(b) < 2+l {
			return "", false
		}
		s := string(b[2 : 2+l])
		b = b[2+l:]
		return s, true
	}
	for range n {
		k, ok := field()
		if !ok || k == "" {
			return nil, nil, errConfigEncoding
		}
		v, ok := field()
		if !ok {
			return nil, nil, errConfigEncoding
		}
		if _, dup := cfg[k]; dup {
			return nil, nil, errConfigEncoding
		}
		cfg[k] = v
	}
	return cfg, b, nil
}

// GroupConfigs are the Kafka group configs set explicitly on one group
// (consumer.session.timeout.ms=50000), in TopicConfigs' shape and
// encoding. Configs not in the map have the gateway's defaults.
type GroupConfigs = TopicConfigs

// GroupConfigStore is a Backend's group configs (Kafka's ConfigResource
// type GROUP, KIP-848). They are independent of the group's state: they
// may be set before the group exists and outlive DeleteGroups, as on
// Kafka 4.1.
type GroupConfigStore interface {
	// GroupConfigs returns the group's configs (a fresh map the caller
	// owns; nil when none are set).
	GroupConfigs(ctx context.Context, stream, group string) (GroupConfigs, error)
	// SetGroupConfigs replaces the group's configs with cfg (nil or empty:
	// none).
	SetGroupConfigs(ctx context.Context, stream, group string, cfg GroupConfigs) error
	// ConfiguredGroups lists the stream's groups that have configs set,
	// sorted (what ListConfigResources reports for type GROUP, as Kafka
	// does).
	ConfiguredGroups(ctx context.Context, stream string) ([]string, error)
}
