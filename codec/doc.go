// Package codec is the pure wire layer of the gateway: Kafka frame sizes,
// request headers parsed in place, response headers, record-batch v2 views,
// record iteration, decompression under a byte budget, and a v2 batch builder.
//
// It does no I/O and imports nothing of this module. Every function may run
// on any goroutine. Slices returned by views alias their input: they are valid
// only as long as the input is, so callers that keep them must copy.
package codec
