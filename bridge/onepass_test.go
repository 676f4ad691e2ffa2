package bridge

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggy-kafka/gateway/codec"
)

// TestOnePassMatchesTwoPass: EncodeKafkaRecords (one walk when it can)
// writes exactly the bytes, stats and error of the two-walk encoding, for
// batches it takes in one walk and for those it hands back: a later record
// older than the first (the origin moves), timestamps out of range, a
// record too large, and a record too large before a
// malformed one (the two-walk order reports the malformed one).
func TestOnePassMatchesTwoPass(t *testing.T) {
	t.Parallel()
	big := make([]byte, 3000)
	cases := []struct {
		name       string
		recs       []rec
		maxMessage int
		onePass    bool
	}{
		{"rising", []rec{{value: []byte("a"), ts: nowMs}, {key: []byte("k"), value: []byte("b"), ts: nowMs + 5}, {value: nil, ts: nowMs + 5}}, 0, true},
		{"same time", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte{}, ts: nowMs, headers: []hdr{{"h", []byte("v")}}}}, 0, true},
		{"older later", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: nowMs - 1000}, {value: []byte("c"), ts: nowMs + 1}}, 0, false},
		{"epoch and none", []rec{{value: []byte("a"), ts: 0}, {value: []byte("b"), ts: -1}}, 0, true},
		{"none after a time", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: -1}}, 0, false},
		{"clamped", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: nowMs + 10_000_000}}, 0, true},
		{"out of range", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: maxOriginMs + 1}}, 0, false},
		{"repeated header", []rec{{value: []byte("a"), ts: nowMs}, {value: []byte("b"), ts: nowMs, headers: []hdr{{"h", nil}, {"h", nil}}}}, 0, true},
		{"too large", []rec{{value: []byte("a"), ts: nowMs}, {value: big, ts: nowMs}}, 1000, false},
		{"envelope", []rec{{value: []byte("a"), ts: nowMs, headers: []hdr{{"h", nil}}}}, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rb, _, err := codec.ParseBatch(kafkaBatch(t, plainMeta, c.recs))
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte("prefix")
			got, gs, gerr := EncodeKafkaRecords(bytes.Clone(prefix), &rb, rb.Records, c.maxMessage)
			want, ws, werr := encodeTwoPass(bytes.Clone(prefix), &rb, rb.Records, c.maxMessage)
			// The two pass gathers no checksum input (Sums); the rest of
			// the stats agree.
			same := gs.Messages == ws.Messages && gs.Bytes == ws.Bytes && gs.Exact == ws.Exact && gs.Times == ws.Times
			if !bytes.Equal(got, want) || !same || (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
				t.Fatalf("one pass: %x %+v %v\ntwo pass: %x %+v %v", got, gs, gerr, want, ws, werr)
			}
			_, _, _, ok := encodeOnePass(bytes.Clone(prefix), &rb, rb.Records, c.maxMessage)
			if ok != c.onePass {
				t.Fatalf("one pass taken: %v, want %v", ok, c.onePass)
			}
		})
	}
	// Too large first, malformed later: the answer is still the malformed
	// record's (ErrRecordInvalid), as the first walk finds it before any
	// message is written.
	rb, _, err := codec.ParseBatch(kafkaBatch(t, plainMeta, []rec{{value: big, ts: nowMs}, {value: []byte("b"), ts: nowMs}}))
	if err != nil {
		t.Fatal(err)
	}
	cut := rb
	cut.Records = rb.Records[:len(rb.Records)-1]
	if _, _, err := EncodeKafkaRecords(nil, &cut, cut.Records, 1000); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("too large then malformed: %v, want ErrRecordInvalid", err)
	}
}
