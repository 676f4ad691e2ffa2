"""kafka-python (Debian's python3-kafka) against the gateway: admin calls, a
keyed round trip with headers and a consumer group. Every step asserts what
it got and prints one "OK ..." line; the first wrong answer prints
"FAIL ..." and exits 1.

Run by e2e/python_kafkajs_test.go:

    /usr/bin/python3 e2e/python/kafka_python_check.py BOOTSTRAP TOPIC GROUP

kafka-python 2.0.2 has no incremental_alter_configs and no delete_records: it
alters with AlterConfigs. Its describe_configs
returns the raw DescribeConfigs responses.
"""

import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidConfigurationError, TopicAlreadyExistsError

from checks import BOOTSTRAP, GROUP, HOST, N, PORT, TOPIC, check, fail, ok  # e2e/python/checks.py, beside this file

# DescribeConfigs v1+ config_source values (KIP-226).
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


def describe(admin):
    """The topic's configs as {name: (value, read_only, source or is_default)}."""
    resps = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    check(len(resps) == 1, "describe_configs answered %d responses" % len(resps))
    resp = resps[0]
    check(len(resp.resources) == 1, "describe_configs resources %r" % (resp.resources,))
    err, msg, _rtype, name, entries = resp.resources[0]
    check(err == 0 and name == TOPIC, "describe_configs %s: error %d %s" % (name, err, msg))
    out = {}
    for e in entries:
        # v0: (name, value, read_only, is_default, is_sensitive);
        # v1+: (name, value, read_only, config_source, is_sensitive, synonyms).
        out[e[0]] = (e[1], e[2], e[3])
    return resp.API_VERSION, out


admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, client_id="kafka-python-check", request_timeout_ms=30000)

# Metadata: one broker, this gateway, also the controller.
cl = admin.describe_cluster()
brokers = [(b["node_id"], b["host"], b["port"]) for b in cl["brokers"]]
check(brokers == [(1, HOST, int(PORT))], "brokers %r, want [(1, %s)]" % (brokers, BOOTSTRAP))
check(cl["controller_id"] == 1, "controller %r" % cl["controller_id"])
check(cl["cluster_id"] == "e2e", "cluster id %r" % cl["cluster_id"])
ok("describe_cluster broker 1 %s:%s controller 1" % (HOST, PORT))

# CreateTopics with a config; the same again is TOPIC_ALREADY_EXISTS.
resp = admin.create_topics([NewTopic(TOPIC, 2, 1, topic_configs={"retention.ms": "3600000"})], timeout_ms=10000)
check(all(t[1] == 0 for t in resp.topic_errors), "create_topics %r" % (resp.topic_errors,))
try:
    admin.create_topics([NewTopic(TOPIC, 2, 1, topic_configs={"retention.ms": "3600000"})])
    fail("second create_topics succeeded")
except TopicAlreadyExistsError:
    pass
ok("create_topics 2 partitions; again: TOPIC_ALREADY_EXISTS")

# DescribeConfigs: the value set, Kafka's defaults marked as defaults.
version, cfg = describe(admin)
dynamic, default = (DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG) if version >= 1 else (False, True)
check(cfg["retention.ms"] == ("3600000", False, dynamic), "retention.ms %r (v%d)" % (cfg["retention.ms"], version))
for name, want in (("cleanup.policy", "delete"), ("retention.bytes", "-1")):
    check(cfg[name] == (want, False, default), "%s %r (v%d)" % (name, cfg[name], version))
ok("describe_configs v%d retention.ms=3600000 dynamic; cleanup.policy=delete default" % version)

# AlterConfigs (not incremental): the configs become exactly those given.
resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC,
                                           configs={"retention.ms": "7200000", "segment.ms": "600000"})])
check([r[0] for r in resp.resources] == [0], "alter_configs %r" % (resp.resources,))
_, cfg = describe(admin)
check(cfg["retention.ms"] == ("7200000", False, dynamic) and cfg["segment.ms"] == ("600000", False, dynamic),
      "after alter_configs: retention.ms %r segment.ms %r" % (cfg["retention.ms"], cfg["segment.ms"]))
ok("alter_configs retention.ms=7200000 segment.ms=600000")

resp = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"made.up": "1"})])
err, msg = resp.resources[0][0], resp.resources[0][1]
check(err == InvalidConfigurationError.errno and "made.up" in (msg or ""), "unknown config: %d %r" % (err, msg))
ok("alter_configs unknown config refused: INVALID_CONFIG")

# CreatePartitions: 2 -> 4, seen in Metadata.
resp = admin.create_partitions({TOPIC: NewPartitions(4)})
check(all(t[1] == 0 for t in resp.topic_errors), "create_partitions %r" % (resp.topic_errors,))
md = admin.describe_topics([TOPIC])
check(len(md) == 1 and md[0]["error_code"] == 0, "describe_topics %r" % md)
parts = sorted((p["partition"], p["leader"], p["replicas"], p["isr"]) for p in md[0]["partitions"])
check(parts == [(i, 1, [1], [1]) for i in range(4)], "partitions after create_partitions: %r" % parts)
ok("create_partitions 4")

# Produce: keyed records with headers to partitions 0 and 1, each
# acknowledged at its offset.
prod = KafkaProducer(bootstrap_servers=BOOTSTRAP, acks="all", linger_ms=5)
want, futures = [], []
for i in range(2 * N):
    part = i % 2
    key, value = "key-%d" % (i % 3), "value %d ünïcode" % i
    headers = [("trace", ("t-%d" % i).encode()), ("src", b"kafka-python")]
    futures.append(prod.send(TOPIC, key=key.encode(), value=value.encode(), headers=headers, partition=part))
    want.append((part, i // 2, key, value, headers))
prod.flush(30)
acked = sorted((md.partition, md.offset) for md in (f.get(timeout=30) for f in futures))
check(acked == sorted((w[0], w[1]) for w in want), "acked offsets %r" % acked)
prod.close()
ok("produced %d" % len(acked))

# A consumer group: subscribe, read every record back identical, commit.
cons = KafkaConsumer(TOPIC, bootstrap_servers=BOOTSTRAP, group_id=GROUP, client_id="kafka-python-check",
                     auto_offset_reset="earliest", enable_auto_commit=False)
got = []
deadline = time.time() + 60
while len(got) < len(want) and time.time() < deadline:
    for _tp, msgs in cons.poll(timeout_ms=1000).items():
        for m in msgs:
            got.append((m.partition, m.offset, m.key.decode(), m.value.decode(), list(m.headers)))
got.sort(key=lambda r: (r[0], r[1]))
want.sort(key=lambda r: (r[0], r[1]))
check(got == want, "consumed %d records, first differences: %r" %
      (len(got), [(g, w) for g, w in zip(got, want) if g != w][:3] or (got[-3:], want[-3:])))
cons.commit()
ok("consumed %d in group" % len(got))

# ListGroups, DescribeGroups and OffsetFetch while the member is live.
groups = admin.list_consumer_groups()
check((GROUP, "consumer") in groups, "list_consumer_groups %r" % groups)
desc = admin.describe_consumer_groups([GROUP])
check(len(desc) == 1, "describe_consumer_groups %r" % desc)
g = desc[0]
check(g.error_code == 0 and g.state == "Stable" and g.protocol_type == "consumer",
      "group %s: error %d state %r type %r" % (g.group, g.error_code, g.state, g.protocol_type))
check(len(g.members) == 1 and g.members[0].client_id == "kafka-python-check", "members %r" % (g.members,))
assigned = sorted(p for t, ps in g.members[0].member_assignment.assignment if t == TOPIC for p in ps)
check(assigned == [0, 1, 2, 3], "member assignment %r" % (g.members[0].member_assignment.assignment,))
offsets = admin.list_consumer_group_offsets(GROUP)
committed = sorted((tp.partition, om.offset) for tp, om in offsets.items() if tp.topic == TOPIC)
check(committed[:2] == [(0, N), (1, N)], "committed %r" % committed)
ok("list_consumer_groups, describe_consumer_groups %s Stable 1 member; committed [%d, %d]" % (GROUP, N, N))
cons.close()

ends = KafkaConsumer(bootstrap_servers=BOOTSTRAP)
tps = [TopicPartition(TOPIC, p) for p in range(4)]
check(ends.beginning_offsets(tps) == {tp: 0 for tp in tps}, "beginning offsets %r" % ends.beginning_offsets(tps))
check(ends.end_offsets(tps) == dict(zip(tps, [N, N, 0, 0])), "end offsets %r" % ends.end_offsets(tps))
ends.close()
ok("offsets [0, 0, 0, 0] to [%d, %d, 0, 0]" % (N, N))
admin.close()
