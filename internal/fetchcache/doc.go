// Package fetchcache holds what the gateway learns and keeps between reads
// of a partition so the next read costs less: the tail cache (Tail: the
// Kafka form of recently produced batches, which Fetch sends as they came),
// and learned sizes (Ratios: stored bytes per Kafka byte, which sizes
// Fetch's store reads; Samples: the bounded per-key map both Ratios and the
// Iggy store's bytes-per-message estimate keep their last sample in).
//
// Read-ahead, the third way a Fetch is made cheaper, stays in bridge/iggy
// (readahead.go): it is a poll of the Iggy server made before it is asked
// for, served to the store's own poll loop, below the Backend interface.
//
// It imports nothing of the gateway's, so handlers and backends may both
// use it. Everything here is safe for concurrent use.
package fetchcache
