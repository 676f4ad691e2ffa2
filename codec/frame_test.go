package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func be32(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func TestFrameSizeErrors(t *testing.T) {
	t.Parallel()
	const max = 1 << 20
	tests := []struct {
		name string
		in   []byte
		size int32
		err  error
	}{
		{"ok", be32(100), 100, nil},
		{"ok at max", be32(max), max, nil},
		{"zero", be32(0), 0, ErrFrameZero},
		{"negative", be32(-1), -1, ErrFrameNegative},
		{"min int32", be32(-1 << 31), -1 << 31, ErrFrameNegative},
		{"over max", be32(max + 1), max + 1, ErrFrameTooLarge},
		{"HTTP response", []byte("HTTP/1.1 200 OK"), 0x48545450, ErrFrameHTTP},
		{"GET", []byte("GET / HTTP/1.1\r\n"), 0x47455420, ErrFrameHTTP},
		{"POST", []byte("POST /x HTTP/1.1"), 0x504f5354, ErrFrameHTTP},
		{"PUT", []byte("PUT /x HTTP/1.1"), 0x50555420, ErrFrameHTTP},
		{"HEAD", []byte("HEAD / HTTP/1.1"), 0x48454144, ErrFrameHTTP},
		{"HTTP/2 preface", []byte("PRI * HTTP/2.0"), 0x50524920, ErrFrameHTTP},
		{"TLS 1.0 record", []byte{0x16, 0x03, 0x01, 0x02, 0x00}, 0x16030102, ErrFrameTLS},
		{"TLS 1.2 record", []byte{0x16, 0x03, 0x03, 0x00, 0x7a}, 0x16030300, ErrFrameTLS},
		{"garbage over max", []byte{0x7f, 0, 0, 0}, 0x7f000000, ErrFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, ok, err := FrameSize(tc.in, max)
			if !ok || size != tc.size || !errors.Is(err, tc.err) {
				t.Fatalf("FrameSize = %d, %v, %v; want %d, true, %v", size, ok, err, tc.size, tc.err)
			}
		})
	}
}

// TestFrameSizeHTTPUnderLimit: a huge limit lets an HTTP prefix through as a
// size; the HTTP name is only given for sizes over the limit.
func TestFrameSizeHTTPUnderLimit(t *testing.T) {
	t.Parallel()
	size, ok, err := FrameSize([]byte("GET /"), 1<<31-1)
	if !ok || err != nil || size != 0x47455420 {
		t.Fatalf("got %d %v %v", size, ok, err)
	}
}

func TestFrameSizeSplit(t *testing.T) {
	t.Parallel()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("split")).
		AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 7)
	for cut := 0; cut <= len(frame); cut++ {
		size, ok, err := FrameSize(frame[:cut], 1<<20)
		if cut < 4 {
			if ok || err != nil {
				t.Fatalf("cut %d: ok=%v err=%v, want not ok", cut, ok, err)
			}
			continue
		}
		if !ok || err != nil || int(size) != len(frame)-4 {
			t.Fatalf("cut %d: size=%d ok=%v err=%v", cut, size, ok, err)
		}
	}
}

// everyRequest calls f with a request of every key and version kmsg knows.
func everyRequest(t *testing.T, f func(req kmsg.Request)) {
	t.Helper()
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req := kmsg.RequestForKey(k)
			req.SetVersion(v)
			f(req)
		}
	}
}

func TestParseRequestHeaderEveryKeyVersion(t *testing.T) {
	t.Parallel()
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-1"))
	n := 0
	everyRequest(t, func(req kmsg.Request) {
		n++
		k, v := req.Key(), req.GetVersion()
		frame := fmtr.AppendRequest(nil, req, 0x01020304)[4:]
		h, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatalf("key %d v%d: %v", k, v, err)
		}
		if h.Key != k || h.Version != v || h.CorrelationID != 0x01020304 || h.Flexible != req.IsFlexible() {
			t.Fatalf("key %d v%d: header %+v, flexible want %v", k, v, h, req.IsFlexible())
		}
		if RequestIsFlexible(k, v) != req.IsFlexible() {
			t.Fatalf("key %d v%d: RequestIsFlexible disagrees with kmsg", k, v)
		}
		wantID := "client-1"
		if k == 7 && v == 0 {
			// Header v0 has no client id, and kmsg's formatter writes
			// no body for this one request either.
			if string(h.ClientID) != "" || h.BodyOffset != 8 {
				t.Fatalf("ControlledShutdown v0: %+v", h)
			}
			return
		}
		if string(h.ClientID) != wantID {
			t.Fatalf("key %d v%d: client id %q", k, v, h.ClientID)
		}
		body := kmsg.RequestForKey(k)
		body.SetVersion(v)
		if err := body.ReadFrom(frame[h.BodyOffset:]); err != nil {
			t.Fatalf("key %d v%d: body at offset %d does not decode: %v", k, v, h.BodyOffset, err)
		}
	})
	if n < 200 {
		t.Fatalf("only %d key/versions tried", n)
	}
}

func TestRequestIsFlexibleKnownPoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, version int16
		want         bool
	}{
		{0, 8, false}, {0, 9, true}, // Produce
		{1, 11, false}, {1, 12, true}, // Fetch
		{3, 8, false}, {3, 9, true}, // Metadata
		{18, 2, false}, {18, 3, true}, // ApiVersions
		{18, 100, true}, // newer than kmsg knows: still flexible
		{-1, 9, false}, {kmsg.MaxKey + 1, 9, false}, {0x7fff, 0, false},
	}
	for _, tc := range tests {
		if got := RequestIsFlexible(tc.key, tc.version); got != tc.want {
			t.Errorf("RequestIsFlexible(%d, %d) = %v", tc.key, tc.version, got)
		}
	}
}

func TestParseRequestHeaderNullAndEmptyClientID(t *testing.T) {
	t.Parallel()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(1)
	null := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]
	h, err := ParseRequestHeader(null)
	if err != nil || h.ClientID != nil || h.BodyOffset != 10 {
		t.Fatalf("null client id: %+v %v", h, err)
	}
	empty := kmsg.NewRequestFormatter(kmsg.FormatterClientID("")).AppendRequest(nil, req, 1)[4:]
	h, err = ParseRequestHeader(empty)
	if err != nil || h.ClientID == nil || len(h.ClientID) != 0 {
		t.Fatalf("empty client id: %+v %v", h, err)
	}
}

// A rebased header reads its client id from the copy, whatever becomes of
// the bytes it was parsed from, for every header shape.
func TestRequestHeaderRebase(t *testing.T) {
	t.Parallel()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	for name, orig := range map[string][]byte{
		"v1":      kmsg.NewRequestFormatter(kmsg.FormatterClientID("client-1")).AppendRequest(nil, md, 1)[4:],
		"v2":      append(v2Header([]byte{1, 0, 1, 'x'}), 0xee),
		"null id": kmsg.NewRequestFormatter().AppendRequest(nil, md, 1)[4:],
		"empty":   kmsg.NewRequestFormatter(kmsg.FormatterClientID("")).AppendRequest(nil, md, 1)[4:],
	} {
		h, err := ParseRequestHeader(orig)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := h
		if h.ClientID != nil {
			want.ClientID = append([]byte{}, h.ClientID...)
		}
		cp := append([]byte(nil), orig...)
		got := h.Rebase(cp)
		for i := range orig {
			orig[i] = 0xEE
		}
		if (got.ClientID == nil) != (want.ClientID == nil) || string(got.ClientID) != string(want.ClientID) {
			t.Fatalf("%s: client id %q after the original was overwritten, want %q", name, got.ClientID, want.ClientID)
		}
		if got.Key != want.Key || got.Version != want.Version || got.CorrelationID != want.CorrelationID ||
			got.BodyOffset != want.BodyOffset || got.Flexible != want.Flexible {
			t.Fatalf("%s: rebased %+v, want %+v", name, got, want)
		}
	}
}

// v2Header builds a flexible Produce v9 header with the given tag section.
func v2Header(tags []byte) []byte {
	b := []byte{0, 0, 0, 9, 0, 0, 0, 42, 0, 2, 'i', 'd'}
	return append(b, tags...)
}

func TestParseRequestHeaderTags(t *testing.T) {
	t.Parallel()
	tags := []byte{2, 0, 3, 'a', 'b', 'c', 5, 0}
	frame := append(v2Header(tags), 0xee)
	h, err := ParseRequestHeader(frame)
	if err != nil || !h.Flexible || h.BodyOffset != len(frame)-1 || string(h.ClientID) != "id" {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestParseRequestHeaderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"7 bytes", []byte{0, 3, 0, 1, 0, 0, 0}},
		{"no client id length", []byte{0, 3, 0, 1, 0, 0, 0, 1}},
		{"client id length -2", []byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}},
		{"client id past end", []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 5, 'a'}},
		{"flexible, no tags", v2Header(nil)},
		{"tag count past end", v2Header([]byte{3, 0, 0})},
		{"tag size past end", v2Header([]byte{1, 0, 9, 'x'})},
		{"tag varint too long", v2Header([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0})},
		{"tag count overflow", v2Header([]byte{0xff, 0xff, 0xff, 0xff, 0x7f})},
		{"huge tag size", v2Header([]byte{1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseRequestHeader(tc.in); err != ErrHeader {
				t.Fatalf("err = %v, want ErrHeader", err)
			}
		})
	}
}

// TestParseRequestHeaderEveryCut cuts real headers (v1 and v2) at every
// offset before the body: each must fail, and the correlation id must be
// kept once its bytes are there.
func TestParseRequestHeaderEveryCut(t *testing.T) {
	t.Parallel()
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cut-client"))
	for _, v := range []int16{1, 9, 12} { // Metadata: header v1, v2, v2
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		frame := fmtr.AppendRequest(nil, req, 77)[4:]
		full, err := ParseRequestHeader(frame)
		if err != nil {
			t.Fatal(err)
		}
		for cut := 0; cut < full.BodyOffset; cut++ {
			h, err := ParseRequestHeader(frame[:cut])
			if err != ErrHeader {
				t.Fatalf("v%d cut %d: err %v", v, cut, err)
			}
			if cut >= 8 && (h.CorrelationID != 77 || h.Key != 3 || h.Version != v) {
				t.Fatalf("v%d cut %d: partial header lost: %+v", v, cut, h)
			}
		}
		h, err := ParseRequestHeader(frame[:full.BodyOffset])
		if err != nil || h.BodyOffset != full.BodyOffset {
			t.Fatalf("v%d: header alone: %+v %v", v, h, err)
		}
	}
}

func TestUnknownKeyParsesAsV1(t *testing.T) {
	t.Parallel()
	frame := []byte{0x03, 0xe8, 0, 5, 0, 0, 0, 9, 0, 1, 'c', 0xab}
	h, err := ParseRequestHeader(frame)
	if err != nil || h.Key != 1000 || h.Flexible || h.BodyOffset != 11 || h.CorrelationID != 9 {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestResponseHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, version int16
		want         []byte
	}{
		{0, 8, []byte{0, 0, 0, 5, 0, 0, 0, 7, 0xaa}},
		{0, 9, []byte{0, 0, 0, 6, 0, 0, 0, 7, 0, 0xaa}},
		{18, 3, []byte{0, 0, 0, 5, 0, 0, 0, 7, 0xaa}}, // ApiVersions: always v0
		{18, 4, []byte{0, 0, 0, 5, 0, 0, 0, 7, 0xaa}},
		{3, 12, []byte{0, 0, 0, 6, 0, 0, 0, 7, 0, 0xaa}},
		{999, 1, []byte{0, 0, 0, 5, 0, 0, 0, 7, 0xaa}},
	}
	for _, tc := range tests {
		prefix := []byte("prev")
		buf := AppendResponseHeader(prefix, tc.key, tc.version, 7)
		if len(buf)-len(prefix)-4 != ResponseHeaderLen(tc.key, tc.version) {
			t.Errorf("key %d v%d: ResponseHeaderLen %d disagrees", tc.key, tc.version, ResponseHeaderLen(tc.key, tc.version))
		}
		buf = append(buf, 0xaa)
		PatchFrameSize(buf, len(prefix))
		if !bytes.Equal(buf[len(prefix):], tc.want) || string(buf[:4]) != "prev" {
			t.Errorf("key %d v%d: % x", tc.key, tc.version, buf)
		}
	}
}

// TestResponseHeaderMatchesKmsg decodes a real response written after our
// header with kmsg, for every response kmsg knows: the header length must
// be what kmsg expects to skip.
func TestResponseHeaderMatchesKmsg(t *testing.T) {
	t.Parallel()
	everyRequest(t, func(req kmsg.Request) {
		k, v := req.Key(), req.GetVersion()
		resp := req.ResponseKind()
		resp.SetVersion(v)
		buf := AppendResponseHeader(nil, k, v, 3)
		buf = resp.AppendTo(buf)
		PatchFrameSize(buf, 0)
		flexHeader := resp.IsFlexible() && k != 18
		want := 4
		if flexHeader {
			want = 5
		}
		if ResponseHeaderLen(k, v) != want {
			t.Fatalf("key %d v%d: header len %d want %d", k, v, ResponseHeaderLen(k, v), want)
		}
		dec := req.ResponseKind()
		dec.SetVersion(v)
		if err := dec.ReadFrom(buf[4+want:]); err != nil {
			t.Fatalf("key %d v%d: %v", k, v, err)
		}
	})
}
