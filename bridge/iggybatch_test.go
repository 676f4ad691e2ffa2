package bridge

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/iggy-kafka/gateway/internal/golden"
)

func xxh3Hash(b []byte) uint64 { return xxh3.Hash(b) }

// goldenBatch builds the batch of vector send_messages_partition_0 with
// this package's builder.
func goldenBatch(t *testing.T) []byte {
	t.Helper()
	const origin = 1_700_000_000_000_000
	trace, err := AppendUserHeader(nil, KindString, []byte("trace"), KindString, []byte("abc"))
	if err != nil {
		t.Fatal(err)
	}
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, origin)
	for i, p := range []string{"a", "bb", "ccc"} {
		var h []byte
		if i == 1 {
			h = trace
		}
		if buf, err = bb.Append(buf, [16]byte{byte(i + 1)}, origin+uint64(i)*1000, []byte(p), h); err != nil {
			t.Fatal(err)
		}
	}
	if buf, err = bb.Finish(buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

func TestGoldenSendBatch(t *testing.T) {
	t.Parallel()
	got := goldenBatch(t)
	want := golden.Read(t, filepath.Join("testdata", "send_messages_partition_0.batch.hex"))
	if !bytes.Equal(got, want) {
		t.Fatalf("batch differs from the fixture:\n got %x\nwant %x", got, want)
	}
	checkChecksums(t, got)
	if _, err := VerifyIggyBatch(got); err != nil {
		t.Fatal(err)
	}
}

// The shared golden vectors, when this checkout sits beside them: the
// fixture must equal the batch part of the official SDK's bytes.
func TestGoldenVectorFile(t *testing.T) {
	t.Parallel()
	path := os.Getenv("IGGY_VECTORS")
	if path == "" {
		path = filepath.Join("..", "..", "shared", "iggy", "vectors.json")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("golden vectors not found (%v); set IGGY_VECTORS to check them", err)
	}
	var vectors []struct {
		Name    string `json:"name"`
		BodyHex string `json:"body_hex"`
	}
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	for _, v := range vectors {
		if v.Name != "send_messages_partition_0" {
			continue
		}
		body, err := hex.DecodeString(v.BodyHex)
		if err != nil {
			t.Fatal(err)
		}
		// u32 metadata length, then metadata; the batch follows it.
		meta := int(le.Uint32(body))
		if got := goldenBatch(t); !bytes.Equal(body[4+meta:], got) {
			t.Fatalf("vector batch differs:\n got %x\nwant %x", got, body[4+meta:])
		}
		return
	}
	t.Fatal("vector send_messages_partition_0 missing")
}

func TestStampRecomputesChecksum(t *testing.T) {
	t.Parallel()
	b := goldenBatch(t)
	StampIggyBatch(b, 7, 1234, 5678)
	v, err := VerifyIggyBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if v.PartitionID != 7 || v.BaseOffset != 1234 || v.BaseTimestamp != 5678 {
		t.Fatalf("stamped %+v", v)
	}
	checkChecksums(t, b)
	msgs := messages(t, b)
	if msgs[2].Offset != 1236 || msgs[2].OriginTimestamp != 1_700_000_000_002_000 || msgs[2].Timestamp != 5678 {
		t.Fatalf("message 2 %+v", msgs[2])
	}
	StampIggyBatch(b[:10], 1, 1, 1) // must not panic
}

// StampIggyHeader on a copy of the header gives the header StampIggyBatch
// writes into the whole batch, and reads the frames only.
func TestStampHeaderMatchesStampBatch(t *testing.T) {
	t.Parallel()
	b := goldenBatch(t)
	orig := append([]byte(nil), b...)
	hdr := append([]byte(nil), b[:BatchHeaderSize]...)
	StampIggyHeader(hdr, b[BatchHeaderSize:], 7, 1234, 5678)
	if !bytes.Equal(b, orig) {
		t.Fatal("StampIggyHeader modified the batch")
	}
	StampIggyBatch(b, 7, 1234, 5678)
	if !bytes.Equal(hdr, b[:BatchHeaderSize]) {
		t.Fatalf("header copy %x\nstamped batch %x", hdr, b[:BatchHeaderSize])
	}
	StampIggyHeader(hdr[:10], nil, 1, 1, 1) // must not panic
	StampIggyHeader(hdr, b[BatchHeaderSize:BatchHeaderSize+10], 1, 1, 1)
}

// verifyReference is VerifyIggyBatch as first written: the message
// iterator's checks, then every checksum in a second pass.
func verifyReference(b []byte) error {
	v, err := ParseIggyBatch(b)
	if err != nil {
		return err
	}
	for _, c := range b[bhReserved:BatchHeaderSize] {
		if c != 0 {
			return ErrInvalidBatch
		}
	}
	it := NewIggyMessageIter(v)
	var i uint32
	for it.Next() {
		m := it.Message()
		if m.OffsetDelta != i {
			return ErrInvalidBatch
		}
		i++
	}
	if it.Err() != nil {
		return it.Err()
	}
	rest := v.Messages
	for len(rest) > 0 {
		n := MessageHeaderSize + int(le.Uint32(rest[mfHeadersLen:])) + int(le.Uint32(rest[mfPayloadLen:]))
		if xxh3.Hash(rest[mfID:n]) != le.Uint64(rest[mfChecksum:]) {
			return errors.Join(ErrInvalidBatch, errChecksum)
		}
		rest = rest[n:]
	}
	h := xxh3.New()
	var head [44]byte
	le.PutUint64(head[0:], v.PartitionID)
	le.PutUint64(head[8:], v.BaseOffset)
	le.PutUint64(head[16:], v.BaseTimestamp)
	le.PutUint64(head[24:], v.OriginTimestamp)
	le.PutUint64(head[32:], v.Length)
	le.PutUint32(head[40:], v.Count)
	_, _ = h.Write(head[:])
	for rest := v.Messages; len(rest) > 0; {
		_, _ = h.Write(rest[:8])
		rest = rest[MessageHeaderSize+int(le.Uint32(rest[mfHeadersLen:]))+int(le.Uint32(rest[mfPayloadLen:])):]
	}
	if h.Sum64() != v.Checksum {
		return errors.Join(ErrInvalidBatch, errChecksum)
	}
	return nil
}

// The one-pass VerifyIggyBatch answers as the two-pass reference does for
// every single-bit flip of a stamped batch (malformed, checksum, or fine).
func TestVerifyMatchesReference(t *testing.T) {
	t.Parallel()
	good := goldenBatch(t)
	StampIggyBatch(good, 2, 40, 7)
	kind := func(err error) string {
		switch {
		case err == nil:
			return "ok"
		case errors.Is(err, errChecksum):
			return "checksum"
		case errors.Is(err, ErrInvalidBatch):
			return "invalid"
		}
		return err.Error()
	}
	for i := range good {
		for _, bit := range []byte{1, 0x80} {
			b := append([]byte(nil), good...)
			b[i] ^= bit
			_, got := VerifyIggyBatch(b)
			if want := verifyReference(b); kind(got) != kind(want) {
				t.Fatalf("byte %d bit %#x: %v, reference %v", i, bit, got, want)
			}
		}
	}
	if _, err := VerifyIggyBatch(good); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	good := goldenBatch(t)
	mutate := map[string]func(b []byte) []byte{
		"short":             func(b []byte) []byte { return b[:255] },
		"length over":       func(b []byte) []byte { le.PutUint64(b[bhLength:], uint64(len(b)+1)); return b },
		"length under":      func(b []byte) []byte { le.PutUint64(b[bhLength:], 255); return b },
		"zero count":        func(b []byte) []byte { le.PutUint32(b[bhCount:], 0); return b },
		"count too high":    func(b []byte) []byte { le.PutUint32(b[bhCount:], 4); return b },
		"count too low":     func(b []byte) []byte { le.PutUint32(b[bhCount:], 2); return b },
		"huge count":        func(b []byte) []byte { le.PutUint32(b[bhCount:], 1<<31); return b },
		"reserved header":   func(b []byte) []byte { b[200] = 1; return b },
		"reserved frame":    func(b []byte) []byte { b[256+mfReserved] = 1; return b },
		"payload length":    func(b []byte) []byte { le.PutUint32(b[256+mfPayloadLen:], 1000); return b },
		"offset delta":      func(b []byte) []byte { le.PutUint32(b[256+mfOffsetDelta:], 1); return b },
		"message checksum":  func(b []byte) []byte { b[256+48] ^= 1; return b },
		"batch checksum":    func(b []byte) []byte { b[bhChecksum] ^= 1; return b },
		"origin timestamp":  func(b []byte) []byte { b[bhOriginTs] ^= 1; return b },
		"trailing in batch": func(b []byte) []byte { b = append(b, 0); le.PutUint64(b[bhLength:], uint64(len(b))); return b },
	}
	for name, f := range mutate {
		b := f(append([]byte(nil), good...))
		if _, err := VerifyIggyBatch(b); !errors.Is(err, ErrInvalidBatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Bytes after Length are not part of the batch (a poll reply holds
	// several records back to back).
	if _, err := VerifyIggyBatch(append(append([]byte(nil), good...), 1, 2, 3)); err != nil {
		t.Errorf("bytes after the batch: %v", err)
	}
}

func TestBatchBuilderLimits(t *testing.T) {
	t.Parallel()
	var bb IggyBatchBuilder
	buf := bb.Begin(nil, 1000)
	if _, err := bb.Append(buf, [16]byte{}, 999, []byte("x"), nil); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("origin before the batch origin: %v", err)
	}
	if _, err := bb.Append(buf, [16]byte{}, 1000+MaxTimestampDelta+1, []byte("x"), nil); !errors.Is(err, ErrRecordInvalid) {
		t.Fatalf("origin past the span: %v", err)
	}
	if out, err := bb.Finish(buf); !errors.Is(err, ErrInvalidBatch) || len(out) != 0 {
		t.Fatalf("empty batch: %v %d", err, len(out))
	}
}

func TestUserHeaderCodec(t *testing.T) {
	t.Parallel()
	var b []byte
	var err error
	entries := []struct {
		kk   HeaderKind
		k    string
		vk   HeaderKind
		v    []byte
		fail bool
	}{
		{KindString, "a", KindRaw, []byte("x"), false},
		{KindString, "b", KindUint64, []byte{1, 2, 3, 4, 5, 6, 7, 8}, false},
		{KindRaw, strings.Repeat("k", 255), KindBool, []byte{1}, false},
		{KindString, "", KindRaw, []byte("x"), true},
		{KindString, strings.Repeat("k", 256), KindRaw, []byte("x"), true},
		{KindString, "c", KindRaw, nil, true},
		{KindString, "c", KindUint64, []byte{1}, true},
		{0, "c", KindRaw, []byte("x"), true},
		{16, "c", KindRaw, []byte("x"), true},
	}
	n := 0
	for _, e := range entries {
		before := len(b)
		b, err = AppendUserHeader(b, e.kk, []byte(e.k), e.vk, e.v)
		if (err != nil) != e.fail || (e.fail && len(b) != before) {
			t.Fatalf("entry %q/%x: err %v", e.k, e.v, err)
		}
		if !e.fail {
			n++
		}
	}
	if !bytes.Equal(b[:20], []byte{2, 1, 0, 0, 0, 'a', 1, 1, 0, 0, 0, 'x', 2, 1, 0, 0, 0, 'b', 12, 8}) {
		t.Fatalf("layout %x", b[:20])
	}
	it := NewUserHeaderIter(b)
	for i := 0; it.Next(); i++ {
		e := entries[i]
		if it.KeyKind() != e.kk || string(it.Key()) != e.k || it.ValueKind() != e.vk || !bytes.Equal(it.Value(), e.v) {
			t.Fatalf("entry %d read back wrong", i)
		}
		n--
	}
	if it.Err() != nil || n != 0 {
		t.Fatalf("iter: %v, %d left", it.Err(), n)
	}
	if err := ValidateUserHeaders(b); err != nil {
		t.Fatal(err)
	}
	dup, _ := AppendUserHeader(b, KindString, []byte("a"), KindRaw, []byte("y"))
	if err := ValidateUserHeaders(dup); !errors.Is(err, ErrUserHeader) {
		t.Fatalf("duplicate key: %v", err)
	}
	for _, bad := range [][]byte{{0}, {2, 1, 0, 0, 0}, {2, 0, 0, 0, 0}, {2, 1, 0, 0, 0, 'a'}, {2, 1, 0, 0, 0, 'a', 1, 0, 1, 0, 0}} {
		it := NewUserHeaderIter(bad)
		for it.Next() {
		}
		if !errors.Is(it.Err(), ErrUserHeader) {
			t.Errorf("%x: %v", bad, it.Err())
		}
	}
}
