package bridge

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestTopicConfigsEncoding(t *testing.T) {
	t.Parallel()
	for _, cfg := range []TopicConfigs{nil, {}, {"cleanup.policy": "compact"}, {"retention.ms": "1", "a": "", "segment.bytes": "1073741824"}} {
		b, err := AppendTopicConfigs([]byte("x"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		got, rest, err := ParseTopicConfigs(append(b[1:], 'y'))
		if err != nil || string(rest) != "y" || !maps.Equal(got, cfg) {
			t.Errorf("%v: got %v rest %q err %v", cfg, got, rest, err)
		}
	}
	var ce *ConfigError
	if _, err := AppendTopicConfigs(nil, TopicConfigs{"k": strings.Repeat("v", MaxTopicConfigBytes+1)}); !errors.As(err, &ce) || ce.Name != "k" || !errors.Is(err, ErrConfigRefused) {
		t.Errorf("long value: %v", err)
	}
	good, _ := AppendTopicConfigs(nil, TopicConfigs{"a": "1", "b": "2"})
	for i := range good {
		if _, _, err := ParseTopicConfigs(good[:i]); err == nil {
			t.Errorf("truncated at %d: no error", i)
		}
	}
	dup := []byte{0, 2, 0, 1, 'a', 0, 0, 0, 1, 'a', 0, 0}
	if _, _, err := ParseTopicConfigs(dup); err == nil {
		t.Error("duplicate name accepted")
	}
}

// FuzzTopicConfigs: any bytes decode to an error or to a set that
// re-encodes to the same bytes; never a panic.
func FuzzTopicConfigs(f *testing.F) {
	b, _ := AppendTopicConfigs(nil, TopicConfigs{"cleanup.policy": "compact,delete", "retention.ms": "-1"})
	f.Add(b)
	f.Add([]byte{0, 0})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		cfg, rest, err := ParseTopicConfigs(in)
		if err != nil {
			return
		}
		out, err := AppendTopicConfigs(nil, cfg)
		if err != nil {
			t.Fatalf("decoded set does not encode: %v", err)
		}
		back, _, err := ParseTopicConfigs(append(out, rest...))
		if err != nil || !maps.Equal(back, cfg) {
			t.Fatalf("round trip: %v %v", back, err)
		}
	})
}
