package iggy

import (
	"bytes"
	"io"
	"testing"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/iggy/internal/wire"
)

// FuzzDecodeReply feeds arbitrary frames through every reply decoder the
// client has: nothing may panic or allocate by a length read from the
// peer.
func FuzzDecodeReply(f *testing.F) {
	for _, path := range fixtureFiles(f, "replies") {
		f.Add(readHexFixture(f, path))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		// Framing follows the request, so decode each frame as the answer
		// to the operation it names and to one it does not.
		for _, sent := range []uint8{echoedOp(frame), wire.OpCreateTopic, wire.OpNonReplicated} {
			r, err := decodeFrame(frame, sent)
			if err != nil {
				return
			}
			_ = transient(&r)
			p, err := r.payload()
			if err != nil {
				continue
			}
			decodeAll(p)
		}
	})
}

// decodeAll runs each payload decoder on p.
func decodeAll(p []byte) {
	_, _ = decodeLogin(p)
	_, _ = decodeStream(p)
	if t, err := decodeTopic(p); err == nil {
		for _, part := range t.Partitions {
			_ = part.State()
		}
		_, _ = t.Durability()
	}
	_, _ = decodeTopics(p)
	_, _ = decodeSendReply(p)
	_, _, _ = decodeFirstConfirmation(p)
	_, _, _ = decodeConsumerOffset(p)
	_, _ = decodePoll(p, func(rec []byte) bool {
		v, err := bridge.ParseIggyBatch(rec)
		if err != nil {
			panic("decodePoll passed a record ParseIggyBatch rejects")
		}
		_ = lastOffset(v)
		it := bridge.NewIggyMessageIter(v)
		for it.Next() {
		}
		return true
	})
}

// FuzzFrameReader checks the connection's frame reader against
// ReadFrame: over the same bytes, arriving in reads of any size, it
// returns the same frames in the same order and fails where ReadFrame
// fails. chunk sets the largest read the source returns.
func FuzzFrameReader(f *testing.F) {
	var all []byte
	for _, path := range fixtureFiles(f, "replies") {
		b := readHexFixture(f, path)
		f.Add(b, uint16(7))
		all = append(all, b...)
	}
	f.Add(all, uint16(0))
	f.Add(all, uint16(300))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint16) {
		want := bytes.NewReader(in)
		fr := wire.FrameReader{R: &chunkReader{b: in, max: int(chunk)}}
		var buf []byte
		for {
			w, werr := wire.ReadFrame(want, nil)
			var err error
			buf, err = fr.Read(buf)
			if (werr != nil) != (err != nil) {
				t.Fatalf("ReadFrame: %v, FrameReader: %v", werr, err)
			}
			if werr != nil {
				return
			}
			if !bytes.Equal(buf, w) {
				t.Fatalf("frames differ: %d and %d bytes", len(buf), len(w))
			}
		}
	})
}

// chunkReader returns b in reads of at most max bytes (0: all it can).
type chunkReader struct {
	b   []byte
	max int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	if r.max > 0 && len(p) > r.max {
		p = p[:r.max]
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// FuzzReadFrame checks frame reading: it returns a frame whose size field
// matches its length, or an error, never more than MaxFrame.
func FuzzReadFrame(f *testing.F) {
	for _, path := range fixtureFiles(f, "replies") {
		f.Add(readHexFixture(f, path))
	}
	for _, path := range fixtureFiles(f, "requests") {
		f.Add(readHexFixture(f, path))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := wire.ReadFrame(bytes.NewReader(in), nil)
		if err != nil {
			return
		}
		if len(b) < wire.HeaderSize || len(b) > wire.MaxFrame || int(le.Uint32(b[wire.OffSize:])) != len(b) {
			t.Fatalf("bad frame of %d bytes", len(b))
		}
		if !bytes.Equal(b, in[:len(b)]) {
			t.Fatal("frame differs from input")
		}
	})
}
