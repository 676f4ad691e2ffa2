package share

import (
	"encoding/binary"
	"math"
	"testing"
)

// partitionOf builds a partition at start with the records given as
// (state, deliveries) pairs.
func partitionOf(start int64, recs ...record) *Partition {
	p := newPartition([16]byte{0xab, 1, 2, 3, 15: 0xff}, start)
	p.recs = append(p.recs, recs...)
	p.end = start + int64(len(recs))
	return p
}

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []*Partition{
		partitionOf(0),
		partitionOf(math.MaxInt64 - 3),
		partitionOf(42,
			record{state: stateAvailable, deliveries: 1},
			record{state: stateAcquired, deliveries: 1, owner: "m", deadline: 99},
			record{state: stateAcquired, deliveries: 2, owner: "m", deadline: 99},
			record{state: stateAcked, deliveries: 1},
			record{state: stateAcked, deliveries: 1},
			record{state: stateArchived, deliveries: 0},
			record{state: stateArchived, deliveries: 5},
			record{state: stateAvailable, deliveries: math.MaxInt16},
		),
	} {
		v := appendState([]byte("prefix"), p)
		if string(v[:6]) != "prefix" {
			t.Fatal("appendState overwrote dst")
		}
		got, err := parseState(v[6:], len(p.recs))
		if err != nil {
			t.Fatalf("%s: %v", dump(p), err)
		}
		if got.TopicID != p.TopicID || got.start != p.start || got.end != p.end || len(got.recs) != len(p.recs) {
			t.Fatalf("read %x %s, wrote %x %s", got.TopicID, dump(got), p.TopicID, dump(p))
		}
		for i, r := range p.recs {
			want := record{state: r.state, deliveries: r.deliveries}
			if r.state == stateAcquired {
				want.state = stateAvailable // a lock does not survive the process
			}
			if got.recs[i] != want {
				t.Errorf("offset %d: read %+v, want %+v", p.start+int64(i), got.recs[i], want)
			}
		}
		if got.locks != 0 {
			t.Errorf("read %d locks", got.locks)
		}
	}
	// Equal neighbours are one run: 8 records in 6 runs above.
	p := partitionOf(0, record{state: stateAcked, deliveries: 1}, record{state: stateAcked, deliveries: 1},
		record{state: stateAcquired, deliveries: 1}, record{state: stateAvailable, deliveries: 1})
	if v := appendState(nil, p); binary.BigEndian.Uint32(v[25:]) != 2 {
		t.Errorf("%d runs for two stretches", binary.BigEndian.Uint32(v[25:]))
	}
}

func TestParseStateRefuses(t *testing.T) {
	t.Parallel()
	good := appendState(nil, partitionOf(10, record{state: stateAcked, deliveries: 1}, record{state: stateAvailable, deliveries: 2}))
	if _, err := parseState(good, 2); err != nil {
		t.Fatal(err)
	}
	mod := func(f func(v []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	run := 29 // the first run
	for name, v := range map[string][]byte{
		"empty":             nil,
		"short":             good[:28],
		"version":           mod(func(v []byte) []byte { v[0] = 2; return v }),
		"negative start":    mod(func(v []byte) []byte { v[17] = 0x80; return v }),
		"runs too many":     mod(func(v []byte) []byte { v[28]++; return v }),
		"runs too few":      mod(func(v []byte) []byte { v[28]--; return v }),
		"trailing bytes":    append(append([]byte(nil), good...), 0),
		"run not at end":    mod(func(v []byte) []byte { v[run+7]++; return v }),
		"empty run":         mod(func(v []byte) []byte { binary.BigEndian.PutUint32(v[run+8:], 0); return v }),
		"acquired state":    mod(func(v []byte) []byte { v[run+12] = stateAcquired; return v }),
		"unknown state":     mod(func(v []byte) []byte { v[run+12] = 4; return v }),
		"negative delivery": mod(func(v []byte) []byte { v[run+13] = 0x80; return v }),
		"huge run":          mod(func(v []byte) []byte { binary.BigEndian.PutUint32(v[run+8:], math.MaxUint32); return v }),
		"end past int64": appendState(nil, func() *Partition {
			p := partitionOf(math.MaxInt64-1, record{state: stateAcked}, record{state: stateAvailable, deliveries: 1})
			return p
		}()),
	} {
		if p, err := parseState(v, 1000); err == nil {
			t.Errorf("%s: read %s", name, dump(p))
		}
	}
	if _, err := parseState(good, 1); err == nil {
		t.Error("read a state of 2 records with a bound of 1")
	}
}

func TestStateKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		group, topic string
		partition    int32
	}{
		{"g", "t", 0},
		{"my.group-1", "orders", math.MaxInt32},
		{"share/nested/slashes", "a_b", 7},
		{"with\x00nul", "t", 1}, // group ids are any string
		{"ünïcode", "t", 2},
	} {
		k := stateKey(c.group, c.topic, c.partition)
		g, tp, p, ok := parseKey(k)
		if !ok || g != c.group || tp != c.topic || p != c.partition {
			t.Errorf("parseKey(%q) = %q %q %d %v", k, g, tp, p, ok)
		}
	}
	for _, k := range []string{
		"", "share/", "txn/g\x00t\x000", "share/g\x00t", "share/g\x00t\x00x", "share/g\x00t\x00-1",
		"share/g\x00t\x002147483648", "share/g\x00t\x00",
	} {
		if g, tp, p, ok := parseKey(k); ok {
			t.Errorf("parseKey(%q) = %q %q %d", k, g, tp, p)
		}
	}
}

// FuzzParseState: no value, however damaged, panics parseState or makes
// it describe more than bound records; what it reads is a consistent
// window that encodes back to the same partition.
func FuzzParseState(f *testing.F) {
	f.Add(appendState(nil, partitionOf(0)), 10)
	f.Add(appendState(nil, partitionOf(5, record{state: stateAcked, deliveries: 1}, record{state: stateAvailable, deliveries: 3},
		record{state: stateArchived, deliveries: 5})), 3)
	f.Fuzz(func(t *testing.T, v []byte, bound int) {
		bound = int(uint(bound) % (1 << 16))
		p, err := parseState(v, bound)
		if err != nil {
			return
		}
		if len(p.recs) > bound {
			t.Fatalf("%d records read with a bound of %d", len(p.recs), bound)
		}
		if p.start < 0 || p.end < p.start || p.end-p.start != int64(len(p.recs)) {
			t.Fatalf("window %d-%d of %d records", p.start, p.end, len(p.recs))
		}
		for _, r := range p.recs {
			if r.state == stateAcquired || r.state > stateArchived || r.deliveries < 0 {
				t.Fatalf("record %+v read", r)
			}
		}
		q, err := parseState(appendState(nil, p), bound)
		if err != nil {
			t.Fatalf("re-reading what was read: %v", err)
		}
		if dump(q) != dump(p) || q.TopicID != p.TopicID {
			t.Fatalf("re-read %s, was %s", dump(q), dump(p))
		}
	})
}

func FuzzParseKey(f *testing.F) {
	f.Add("g", "t", int32(0))
	f.Add("a\x00b", "c", int32(3))
	f.Fuzz(func(t *testing.T, group, topic string, partition int32) {
		if partition < 0 || topic == "" {
			return
		}
		for _, c := range topic {
			if c == 0 {
				return // topic names are [a-zA-Z0-9._-]
			}
		}
		g, tp, p, ok := parseKey(stateKey(group, topic, partition))
		if !ok || g != group || tp != topic || p != partition {
			t.Fatalf("%q %q %d read back as %q %q %d %v", group, topic, partition, g, tp, p, ok)
		}
	})
}
