#!/usr/bin/env bash
# Downloads a single-node Apache Kafka broker (kafka_2.13, see pom.xml) and
# its runtime dependencies from Maven Central into bench/kafka/target/lib
# (needs Maven and a JDK 17+). Safe to re-run. The bench harness's
# `compare` looks for the jars there (or in --kafka-lib) and skips the
# Kafka target with a message when they or java are missing.
set -euo pipefail
cd "$(dirname "$0")"
command -v mvn >/dev/null || { echo "fetch.sh: mvn not found (apt-get install maven)" >&2; exit 1; }
# A fresh directory: jars of a version the pom no longer names would
# stay on the classpath beside the new ones.
rm -rf target/lib
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib -DincludeScope=runtime
echo "Kafka broker jars in $(pwd)/target/lib ($(ls target/lib | wc -l) files)"
