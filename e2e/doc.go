// Package e2e drives the gateway with real Kafka clients over real TCP on
// 127.0.0.1: kcat (librdkafka), franz-go, and the Apache Kafka Java client
// and console tools, plus hand-built hostile frames. It holds only tests.
//
// A test whose client is not installed skips with a message naming what to
// install; with IGGY_KAFKA_E2E_REQUIRED=1 (as .ci/run sets) it fails
// instead, so CI cannot pass by skipping. The Java jars come from
// e2e/java/fetch.sh.
package e2e
