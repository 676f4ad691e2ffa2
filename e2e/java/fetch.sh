#!/usr/bin/env bash
# Downloads the Kafka Java client and tools jars the e2e tests use into
# e2e/java/target/lib (needs Maven and a JDK 17+). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")"
# A fresh directory: jars of a version the pom no longer names would
# stay on the classpath beside the new ones.
rm -rf target/lib
mvn -q -B dependency:copy-dependencies -DoutputDirectory=target/lib -DincludeScope=runtime
echo "Kafka Java jars in $(pwd)/target/lib"
