package codec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFrameHeaderParse is the per-request cost on the event loop:
// size prefix, request header (flexible, with a client id), produce acks.
func BenchmarkFrameHeaderParse(b *testing.B) {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("rdkafka-producer-1")).AppendRequest(nil, req, 1)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		size, ok, err := FrameSize(frame, 100<<20)
		if !ok || err != nil || int(size) != len(frame)-4 {
			b.Fatal(err)
		}
		h, err := ParseRequestHeader(frame[4:])
		if err != nil {
			b.Fatal(err)
		}
		if acks, ok := ProduceAcks(frame[4+h.BodyOffset:], h.Version); !ok || acks != -1 {
			b.Fatal("acks")
		}
	}
}
