package handlers

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
)

// A Fetch reply built around its batches is byte for byte the reply
// encoded as any other, at every version, and the call then no longer
// releases the buffer; a reply with batches in two partitions is left to
// the ordinary encoding.
func TestFetchReplyInPlace(t *testing.T) {
	t.Parallel()
	g := newGateway(t, func(c *Config) { c.TailCacheBytes = 0 })
	createTopic(t, g, "a", 2)
	recs := make([]rec, 50)
	for i := range recs {
		recs[i] = rec{key: []byte("k"), value: bytes.Repeat([]byte{byte(i)}, 100)}
	}
	produceOne(t, g, produceReq(9, "a", 0, batch(recs...)))
	var scratch bytebufferpool.Pool
	fetch := func(v int16) (*Call, kmsg.Response) {
		req := fetchReq(v, "a", 0, 0)
		p := req.Topics[0].Partitions[0]
		p.Partition = 1
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, p)
		if v >= 13 {
			req.Topics[0].TopicID = metadataID(t, g, "a")
		}
		dec, err := Decode(1, v, req.AppendTo(nil))
		if err != nil {
			t.Fatal(err)
		}
		c := &Call{G: g, Ctx: t.Context(), Header: codec.RequestHeader{Key: 1, Version: v, CorrelationID: 77}}
		resp, err := Lookup(1).Handle(c, dec)
		if err != nil || resp == nil {
			t.Fatalf("v%d: %v", v, err)
		}
		return c, resp
	}
	for v := int16(4); v <= 18; v++ {
		c, resp := fetch(v)
		want := codec.AppendResponseHeader(nil, 1, v, 77)
		want = resp.AppendTo(want)
		codec.PatchFrameSize(want, 0)
		out := c.EncodeReplyInPlace(&c.Header, resp, &scratch)
		switch {
		case out == nil:
			t.Fatalf("v%d: not built in place", v)
		case !bytes.Equal(out.B, want):
			t.Fatalf("v%d: in place\n%x\nwant\n%x", v, out.B, want)
		case *c.inPlace.slot != nil:
			t.Fatalf("v%d: the call still holds the buffer", v)
		}
		c.RunDeferred()
		FetchBufPool().Put(out)
	}
	produceOne(t, g, produceReq(9, "a", 1, batch(recs[:3]...)))
	for v := int16(4); v <= 18; v++ {
		c, resp := fetch(v)
		if out := c.EncodeReplyInPlace(&c.Header, resp, &scratch); out != nil {
			t.Fatalf("v%d: built in place with batches in two partitions", v)
		}
		c.RunDeferred()
	}
}
