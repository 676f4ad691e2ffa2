package codec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestProduceAcksEveryVersion(t *testing.T) {
	t.Parallel()
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("p"))
	max := kmsg.NewPtrProduceRequest().MaxVersion()
	for v := int16(0); v <= max; v++ {
		for _, txn := range []*string{nil, kmsg.StringPtr(""), kmsg.StringPtr("transactional-id-1")} {
			for _, acks := range []int16{-1, 0, 1} {
				req := kmsg.NewPtrProduceRequest()
				req.SetVersion(v)
				req.TransactionID = txn
				req.Acks = acks
				req.TimeoutMillis = 1000
				frame := fmtr.AppendRequest(nil, req, 5)[4:]
				h, err := ParseRequestHeader(frame)
				if err != nil {
					t.Fatal(err)
				}
				body := frame[h.BodyOffset:]
				got, ok := ProduceAcks(body, v)
				if !ok || got != acks {
					t.Fatalf("v%d txn=%v acks=%d: got %d %v", v, txn != nil, acks, got, ok)
				}
				end := 2
				if v >= 3 {
					end = acksEnd(t, body, v)
				}
				for cut := 0; cut < end; cut++ {
					if _, ok := ProduceAcks(body[:cut], v); ok {
						t.Fatalf("v%d: cut %d of %d accepted", v, cut, end)
					}
				}
			}
		}
	}
}

// acksEnd finds the end of the acks field by encoding the prefix by hand.
func acksEnd(t *testing.T, body []byte, v int16) int {
	t.Helper()
	if v >= 9 {
		n, used := readUvarint32(body)
		if n == 0 {
			return used + 2
		}
		return used + int(n-1) + 2
	}
	n := int(int16(uint16(body[0])<<8 | uint16(body[1])))
	if n < 0 {
		return 4
	}
	return 2 + n + 2
}

func TestProduceAcksBadLengths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    []byte
		version int16
	}{
		{"v3 length -2", []byte{0xff, 0xfe, 0, 1}, 3},
		{"v3 length past end", []byte{0, 9, 'a', 0, 1}, 3},
		{"v9 varint too long", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 1}, 9},
		{"v9 length past end", []byte{0x09, 'a', 0, 1}, 9},
		{"v0 one byte", []byte{0}, 0},
	}
	for _, tc := range tests {
		if _, ok := ProduceAcks(tc.body, tc.version); ok {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
