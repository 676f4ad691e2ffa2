package bench

import "math/rand/v2"

// payloadPool is a block of random alphanumerics that record values are cut
// from, so values look like text (as in the peer baseline) and a
// compression codec sees realistic, not trivially repetitive, input.
type payloadPool struct {
	buf  []byte
	size int
}

const poolBytes = 4 << 20

func newPayloadPool(size int, seed uint64) *payloadPool {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	n := poolBytes
	if n < 2*size {
		n = 2 * size
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = alphabet[r.IntN(len(alphabet))]
	}
	return &payloadPool{buf: buf, size: size}
}

// value returns the i-th value: a window of the pool, shared, not copied.
// Callers must not modify it.
func (p *payloadPool) value(i int) []byte {
	span := len(p.buf) - p.size
	off := 0
	if span > 0 {
		off = (i * 7919) % span
	}
	return p.buf[off : off+p.size : off+p.size]
}
