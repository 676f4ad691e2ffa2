"""confluent-kafka-python (Debian's python3-confluent-kafka, librdkafka
underneath) against the gateway: admin calls, a keyed round trip with
headers and a consumer group. Every step asserts what it got and prints one
"OK ..." line; the first wrong answer prints "FAIL ..." and exits 1.

Run by e2e/python_kafkajs_test.go:

    /usr/bin/python3 e2e/python/confluent_check.py BOOTSTRAP TOPIC GROUP

confluent-kafka 1.7.0 has no incremental_alter_configs, delete_records,
list_consumer_groups or describe_consumer_groups (they came in 2.x): it
alters with AlterConfigs and lists and describes groups with list_groups
(ListGroups + DescribeGroups).
"""

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic

from checks import BOOTSTRAP, GROUP, HOST, N, PORT, TOPIC, check, fail, ok  # e2e/python/checks.py, beside this file


def wait(futures):
    return {k: f.result(timeout=30) for k, f in futures.items()}


def describe(admin):
    res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC)
    return wait(admin.describe_configs([res]))[res]


admin = AdminClient({"bootstrap.servers": BOOTSTRAP})

# Metadata: one broker, this gateway, also the controller.
md = admin.list_topics(timeout=30)
check(list(md.brokers) == [1], "brokers %r" % md.brokers)
b = md.brokers[1]
check((b.host, b.port) == (HOST, int(PORT)), "broker 1 at %s:%d, want %s" % (b.host, b.port, BOOTSTRAP))
check(md.controller_id == 1, "controller %d" % md.controller_id)
check(md.cluster_id == "e2e", "cluster id %r" % md.cluster_id)
ok("metadata broker 1 %s:%d controller 1" % (b.host, b.port))

# CreateTopics with a config; the same again is TOPIC_ALREADY_EXISTS.
wait(admin.create_topics([NewTopic(TOPIC, 2, 1, config={"retention.ms": "3600000"})], operation_timeout=10))
try:
    wait(admin.create_topics([NewTopic(TOPIC, 2, 1, config={"retention.ms": "3600000"})]))
    fail("second create_topics succeeded")
except KafkaException as e:
    check(e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, "second create_topics: %r" % e)
ok("create_topics 2 partitions; again: TOPIC_ALREADY_EXISTS")

# DescribeConfigs: the value set, Kafka's defaults marked as defaults.
cfg = describe(admin)
r = cfg["retention.ms"]
check(r.value == "3600000", "retention.ms %r" % r.value)
check(not r.is_default and r.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
      "retention.ms source %r is_default %r" % (r.source, r.is_default))
for name, want in (("cleanup.policy", "delete"), ("retention.bytes", "-1")):
    c = cfg[name]
    check(c.value == want and c.is_default and c.source == ConfigSource.DEFAULT_CONFIG.value,
          "%s: value %r source %r is_default %r" % (name, c.value, c.source, c.is_default))
ok("describe_configs retention.ms=3600000 dynamic; cleanup.policy=delete default")

# AlterConfigs (not incremental): the configs become exactly those given,
# what is left out returns to its default.
res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"segment.ms": "600000"})
wait(admin.alter_configs([res]))
cfg = describe(admin)
check(cfg["segment.ms"].value == "600000" and cfg["segment.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
      "segment.ms %r source %r" % (cfg["segment.ms"].value, cfg["segment.ms"].source))
check(cfg["retention.ms"].is_default, "retention.ms not back to default: %r" % cfg["retention.ms"].value)
ok("alter_configs segment.ms=600000; retention.ms back to default %s" % cfg["retention.ms"].value)

res = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"made.up": "1"})
try:
    wait(admin.alter_configs([res]))
    fail("alter_configs of an unknown config succeeded")
except KafkaException as e:
    err = e.args[0]
    check(err.code() == KafkaError.INVALID_CONFIG and "made.up" in err.str(), "unknown config: %r" % err)
ok("alter_configs unknown config refused: INVALID_CONFIG")

# CreatePartitions: 2 -> 4, seen in Metadata.
wait(admin.create_partitions([NewPartitions(TOPIC, 4)], operation_timeout=10))
parts = admin.list_topics(TOPIC, timeout=30).topics[TOPIC].partitions
check(sorted(parts) == [0, 1, 2, 3], "partitions after create_partitions: %r" % sorted(parts))
for p in parts.values():
    check(p.leader == 1 and list(p.replicas) == [1] and list(p.isrs) == [1], "partition %r" % p)
ok("create_partitions 4")

# Produce: keyed records with headers to partitions 0 and 1, every one
# acknowledged at its offset.
acked = []


def on_delivery(err, msg):
    if err is not None:
        fail("delivery: %r" % err)
    acked.append((msg.partition(), msg.offset()))


prod = Producer({"bootstrap.servers": BOOTSTRAP, "enable.idempotence": True, "linger.ms": 5})
want = []
for i in range(2 * N):
    part = i % 2
    key, value = "key-%d" % (i % 3), "value %d ünïcode" % i
    headers = [("trace", ("t-%d" % i).encode()), ("src", b"confluent")]
    prod.produce(TOPIC, value=value.encode(), key=key.encode(), partition=part, headers=headers,
                 on_delivery=on_delivery)
    want.append((part, i // 2, key, value, headers))
check(prod.flush(30) == 0, "flush left records undelivered")
check(sorted(acked) == sorted((w[0], w[1]) for w in want), "acked offsets %r" % sorted(acked))
ok("produced %d" % len(acked))

# A consumer group: subscribe, read every record back identical, commit.
cons = Consumer({
    "bootstrap.servers": BOOTSTRAP,
    "group.id": GROUP,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "client.id": "confluent-check",
})
cons.subscribe([TOPIC])
got = []
deadline = time.time() + 60
while len(got) < len(want) and time.time() < deadline:
    m = cons.poll(1.0)
    if m is None:
        continue
    if m.error():
        fail("consume: %r" % m.error())
    got.append((m.partition(), m.offset(), m.key().decode(), m.value().decode(), m.headers()))
got.sort(key=lambda r: (r[0], r[1]))
want.sort(key=lambda r: (r[0], r[1]))
check(got == want, "consumed %d records, first differences: %r" %
      (len(got), [(g, w) for g, w in zip(got, want) if g != w][:3] or (got[-3:], want[-3:])))
cons.commit(asynchronous=False)
committed = cons.committed([TopicPartition(TOPIC, p) for p in range(4)], timeout=30)
check([tp.offset for tp in committed] == [N, N, -1001, -1001], "committed %r" % committed)
lo, hi = cons.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=30)
check((lo, hi) == (0, N), "watermarks of partition 0: %r" % ((lo, hi),))
ok("consumed %d in group, committed [%d, %d]" % (len(got), N, N))

# ListGroups + DescribeGroups while the member is live.
groups = [g for g in admin.list_groups(timeout=30) if g.id == GROUP]
check(len(groups) == 1, "list_groups: %r" % [g.id for g in admin.list_groups(timeout=30)])
g = groups[0]
check(g.state == "Stable" and g.protocol_type == "consumer" and g.protocol == "range",
      "group %s: state %r type %r protocol %r" % (g.id, g.state, g.protocol_type, g.protocol))
check(len(g.members) == 1 and g.members[0].client_id == "confluent-check",
      "members %r" % [(m.id, m.client_id) for m in g.members])
check(TOPIC.encode() in g.members[0].assignment, "assignment %r" % g.members[0].assignment)
ok("list_groups %s Stable 1 member" % GROUP)
cons.close()
