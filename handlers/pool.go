package handlers

import "github.com/valyala/bytebufferpool"

// bigPool holds the MiB-sized buffers of Produce (decompressed records,
// encoded Iggy batches) and Fetch (response record batches). It is kept
// apart from any pool of small replies because bytebufferpool calibrates
// one size class per pool and drops buffers far above it. Any goroutine.
var bigPool bytebufferpool.Pool

// getBig returns an empty pooled buffer; give it back with putBig once no
// slice of it is referenced any more.
func getBig() *bytebufferpool.ByteBuffer {
	b := bigPool.Get()
	b.B = b.B[:0]
	return b
}

func putBig(b *bytebufferpool.ByteBuffer) {
	if b != nil {
		bigPool.Put(b)
	}
}
