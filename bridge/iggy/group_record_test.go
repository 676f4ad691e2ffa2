package iggy

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// The fixtures pin the record format: what a gateway of this version
// wrote, every later version must read.
var groupRecordFixtures = map[string]groupRecord{
	"01_commit.hex": {Kind: recCommit, Stream: "kafka", Group: "g1", Topic: "orders", Partition: 3,
		TopicID: 0x0a0b0c0d, Offset: 42, LeaderEpoch: 7, CommitTime: 1_700_000_000_123, Metadata: "meta"},
	"02_commit_zero.hex":  {Kind: recCommit, Stream: "kafka", Group: "g", Topic: "t", TopicID: 1, LeaderEpoch: -1, CommitTime: 5},
	"03_delete_one.hex":   {Kind: recDeleteOne, Stream: "kafka", Group: "g", Topic: "t", Partition: 1},
	"04_delete_group.hex": {Kind: recDeleteGroup, Stream: "kafka", Group: "g"},
}

func TestGroupRecordFixtures(t *testing.T) {
	t.Parallel()
	files := fixtureFiles(t, "group_records")
	if len(files) != len(groupRecordFixtures) {
		t.Fatalf("%d fixtures, %d expectations", len(files), len(groupRecordFixtures))
	}
	for _, path := range files {
		want, ok := groupRecordFixtures[filepath.Base(path)]
		if !ok {
			t.Fatalf("%s: no expectation", path)
		}
		b := readHexFixture(t, path)
		if got := appendGroupRecord(nil, &want); !bytes.Equal(got, b) {
			t.Errorf("%s: encoding: %s", path, diffBytes(got, b))
		}
		got, err := decodeGroupRecord(b)
		if err != nil || got != want {
			t.Errorf("%s: decoded %+v, %v", path, got, err)
		}
		// Every strict prefix and any trailing byte is refused.
		for n := range len(b) {
			if _, err := decodeGroupRecord(b[:n]); err == nil {
				t.Errorf("%s: prefix of %d bytes accepted", path, n)
			}
		}
		if _, err := decodeGroupRecord(append(b[:len(b):len(b)], 0)); err == nil {
			t.Errorf("%s: trailing byte accepted", path)
		}
	}
}

func TestGroupRecordRefused(t *testing.T) {
	t.Parallel()
	long := make([]byte, 0, 300)
	long = append(long, 1, 3, 0x80, 0x02) // stream of 256 bytes: over Iggy's 255
	long = append(long, bytes.Repeat([]byte{'s'}, 256)...)
	long = append(long, 1, 'g')
	for name, c := range map[string]struct {
		in   []byte
		want error
	}{
		"newer version":    {[]byte{2, 1, 1, 's', 1, 'g'}, errRecordVersion},
		"empty":            {nil, errRecordBad},
		"unknown kind":     {[]byte{1, 4, 1, 's', 1, 'g'}, errRecordBad},
		"kind 0":           {[]byte{1, 0, 1, 's', 1, 'g'}, errRecordBad},
		"empty stream":     {[]byte{1, 3, 0, 1, 'g'}, errRecordBad},
		"empty group":      {[]byte{1, 3, 1, 's', 0}, errRecordBad},
		"empty topic":      {[]byte{1, 2, 1, 's', 1, 'g', 0, 0, 0, 0, 0}, errRecordBad},
		"length past end":  {[]byte{1, 3, 9, 's', 1, 'g'}, errRecordBad},
		"huge length":      {[]byte{1, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, errRecordBad},
		"name over 255":    {long, errRecordBad},
		"overlong varint":  {[]byte{1, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, errRecordBad},
		"truncated commit": {[]byte{1, 1, 1, 's', 1, 'g', 1, 't', 0, 0, 0, 0}, errRecordBad},
	} {
		if _, err := decodeGroupRecord(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// FuzzDecodeGroupRecord: the decoder never panics, returns a record only
// for input that is exactly one record (encoding the record again and
// decoding that gives the same record), and holds no string longer than
// its limit.
func FuzzDecodeGroupRecord(f *testing.F) {
	for _, path := range fixtureFiles(f, "group_records") {
		f.Add(readHexFixture(f, path))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeGroupRecord(in)
		if err != nil {
			if r != (groupRecord{}) {
				t.Fatalf("error %v with a record %+v", err, r)
			}
			return
		}
		if len(r.Stream) > maxRecordName || len(r.Group) > maxRecordName || len(r.Topic) > maxRecordName || len(r.Metadata) > maxRecordMetadata {
			t.Fatalf("over a limit: %+v", r)
		}
		enc := appendGroupRecord(nil, &r)
		if len(enc) > len(in) {
			t.Fatalf("re-encoding is longer (%d) than the input (%d)", len(enc), len(in))
		}
		again, err := decodeGroupRecord(enc)
		if err != nil || again != r {
			t.Fatalf("round trip: %+v %v, want %+v", again, err, r)
		}
	})
}

// FuzzGroupLogApply folds the fixtures and a fuzzed record in every order
// of a few: the fold never panics and never keeps an empty group.
func FuzzGroupLogApply(f *testing.F) {
	var seeds [][]byte
	for _, path := range fixtureFiles(f, "group_records") {
		seeds = append(seeds, readHexFixture(f, path))
	}
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, order uint8) {
		g := newGroupLog()
		payloads := append([][]byte{in}, seeds...)
		for i := range payloads {
			p := payloads[(i+int(order))%len(payloads)]
			r, err := decodeGroupRecord(p)
			if err != nil {
				continue
			}
			g.apply(&r)
		}
		for k, m := range g.groups {
			if len(m) == 0 {
				t.Fatalf("empty group %+v kept", k)
			}
		}
	})
}
