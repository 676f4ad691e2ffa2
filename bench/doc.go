// Package bench is the load harness of the gateway: it drives real franz-go
// (kgo) clients against any Kafka-wire address and records throughput and
// HdrHistogram latencies, and it starts the targets it compares (the
// gateway built from this tree, franz-go's kfake, a single-node Apache
// Kafka broker, a real Iggy server behind the gateway) on 127.0.0.1.
//
// The workloads are RunProduce, RunConsume, RunE2E and RunShareConsume
// (share-group consumers, KIP-932); Compare runs a set of them on several
// targets, interleaved and repeated, and reports medians and ratios to the
// gateway. cmd/iggy-kafka-bench only parses flags and
// calls this package. Every run is bounded by a record count and a
// duration, and every address it starts or dials is on 127.0.0.1.
//
// docs/PERFORMANCE.md has the numbers, the machine they came from and the
// command that made them.
package bench
