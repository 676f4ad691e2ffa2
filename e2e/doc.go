// Package e2e drives the gateway with real Kafka clients over real TCP on
// 127.0.0.1: kcat (librdkafka), franz-go, and the Apache Kafka Java client
// and console tools, plus hand-built hostile frames. It holds only tests.
//
// A test whose client is not installed skips with a message naming what to
// install; with IGGY_KAFKA_E2E_REQUIRED=1 (as .ci/run sets) it fails
// instead, so CI cannot pass by skipping. The Java jars come from
// e2e/java/fetch.sh.
//
// Each *_test.go file holds the tests of one subject (kcat_test.go,
// groups_test.go, cluster_failover_test.go, ...). What several subjects use
// is in helper files, named by what they drive: main_test.go (TestMain,
// skipping for a missing client), gateway_helpers_test.go (an in-process
// gateway), backend_test.go (which store it runs on: embedded, the
// imitation Iggy server or the real one), process_helpers_test.go (the
// gateway binary as a child process), kgo_helpers_test.go and
// kgo_admin_helpers_test.go (franz-go clients: produce, consume, admin
// requests), wire_helpers_test.go (hand-built frames), kcat_, java_, sasl_,
// iggy_cli_ and native_mapping_helpers_test.go, fault_proxy_test.go and
// cluster_helpers_test.go. Tests wait for a condition with internal/await,
// and call t.Parallel unless they say why they run alone.
//
// The share-group tests (share_java_test.go) run against an Apache Kafka
// broker instead of a gateway when IGGY_KAFKA_E2E_KAFKA_ADDR names one
// (bench/kafka's jars start one), which is how their expectations were
// checked against Kafka 4.4.
package e2e
