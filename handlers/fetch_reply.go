package handlers

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"

	"github.com/iggy-kafka/gateway/codec"
)

// A Fetch reply built around its batches. The batches a Fetch maps from
// the store are 1 MiB or so in a buffer of their own; encoding the reply
// as any other copies them into the reply buffer. When one partition of
// the reply holds batches and they lie in such a buffer, the loop asks
// EncodeReplyInPlace for the reply instead: the rest of the reply is
// encoded on its own, small, and its two halves are written before and
// after the batches in their buffer, which becomes the reply. The
// batches' buffer keeps fetchHeadroom bytes free in front for the first
// half (getFetchBuf); a reply whose first half is longer (many
// partitions, many aborted transactions, a long topic name) is encoded as
// any other.

// fetchHeadroom is the room kept in front of a partition's batches.
const fetchHeadroom = 1024

// getFetchBuf returns a pooled buffer for a partition's batches, holding
// fetchHeadroom bytes of room; give it back with putBig.
func getFetchBuf() *bytebufferpool.ByteBuffer {
	b := getBig()
	if cap(b.B) < fetchHeadroom {
		b.B = make([]byte, 0, 64<<10)
	}
	b.B = b.B[:fetchHeadroom]
	return b
}

// batchesMark stands in for the batches while the rest of the reply is
// encoded, so that where they go can be found in it: 16 random bytes,
// which nothing else in a reply can be made to contain.
var batchesMark = func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}()

// inPlace is what EncodeReplyInPlace needs of a Fetch: the slot of the
// one buffer of batches its reply points into, in the slice its deferred
// release walks (emptied when the reply takes the buffer).
type inPlace struct {
	slot **bytebufferpool.ByteBuffer
}

// FetchBufPool is the pool of the buffers EncodeReplyInPlace returns
// replies in: the loop puts them back there once they are written.
func FetchBufPool() *bytebufferpool.Pool { return &bigPool }

// EncodeReplyInPlace encodes resp, the reply to the request hdr, in the
// buffer of its batches when it is a Fetch reply of this call with one
// partition holding batches in a buffer of the call's own, and the part
// of the reply before them fits the room in front of them; the buffer
// then belongs to the caller (put back in FetchBufPool once written) and
// the call no longer releases it. It returns nil otherwise: encode resp
// as any other reply. The rest of the reply is encoded in a buffer of
// scratch, given back before it returns. The worker goroutine running the
// call, after Handle and before RunDeferred.
func (c *Call) EncodeReplyInPlace(hdr *codec.RequestHeader, resp kmsg.Response, scratch *bytebufferpool.Pool) *bytebufferpool.ByteBuffer {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok || c.inPlace.slot == nil || *c.inPlace.slot == nil {
		return nil
	}
	buf := *c.inPlace.slot
	sp := onlyBatches(fr)
	if sp == nil || len(buf.B) < fetchHeadroom {
		return nil
	}
	recs := sp.RecordBatches
	n := len(recs)
	if n > len(buf.B)-fetchHeadroom || &recs[0] != &buf.B[fetchHeadroom] {
		return nil // the partition's batches are not this buffer's
	}
	sb := scratch.Get()
	defer scratch.Put(sb)
	sp.RecordBatches = batchesMark
	sb.B = codec.AppendResponseHeader(sb.B[:0], hdr.Key, fr.GetVersion(), hdr.CorrelationID)
	sb.B = fr.AppendTo(sb.B)
	sp.RecordBatches = recs
	at := bytes.Index(sb.B, batchesMark)
	if at < 0 || bytes.LastIndex(sb.B, batchesMark) != at {
		return nil
	}
	// The length in front of the mark: a compact length (len+1) from
	// version 12 on, an int32 before.
	var size [binary.MaxVarintLen64]byte
	var head, length []byte
	if fr.IsFlexible() {
		if at < 1 || sb.B[at-1] != byte(len(batchesMark)+1) {
			return nil
		}
		head, length = sb.B[:at-1], size[:binary.PutUvarint(size[:], uint64(n)+1)]
	} else {
		if at < 4 || binary.BigEndian.Uint32(sb.B[at-4:]) != uint32(len(batchesMark)) {
			return nil
		}
		binary.BigEndian.PutUint32(size[:], uint32(n))
		head, length = sb.B[:at-4], size[:4]
	}
	tail := sb.B[at+len(batchesMark):]
	start := fetchHeadroom - len(head) - len(length)
	if start < 0 {
		return nil
	}
	copy(buf.B[start:], head)
	copy(buf.B[start+len(head):], length)
	// The buffer goes back to its pool starting where the reply does, up
	// to fetchHeadroom bytes shorter; append grows it again once batches
	// no longer fit.
	buf.B = append(buf.B[:fetchHeadroom+n], tail...)[start:]
	codec.PatchFrameSize(buf.B, 0)
	*c.inPlace.slot = nil
	return buf
}

// onlyBatches is the one partition of fr holding batches, nil when none
// or more than one does.
func onlyBatches(fr *kmsg.FetchResponse) *kmsg.FetchResponseTopicPartition {
	var found *kmsg.FetchResponseTopicPartition
	for i := range fr.Topics {
		ps := fr.Topics[i].Partitions
		for j := range ps {
			if len(ps[j].RecordBatches) == 0 {
				continue
			}
			if found != nil {
				return nil
			}
			found = &ps[j]
		}
	}
	return found
}
