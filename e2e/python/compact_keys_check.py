"""confluent-kafka-python (librdkafka) against the gateway: a compacted topic
refuses records without a key, per message, with INVALID_RECORD, and
stores nothing of a batch holding one; keyed records and tombstones are
kept. Every step asserts what it got and prints one "OK ..." line; the
first wrong answer prints "FAIL ..." and exits 1.

Run by e2e/topic_policies_test.go:

    /usr/bin/python3 e2e/python/compact_keys_check.py BOOTSTRAP TOPIC GROUP

TOPIC names the compact topic; TOPIC-both (compact,delete) is made too.
librdkafka 2.0.2 fails every message of a refused batch with the
partition's error (newer librdkafka tells the keyed ones apart with
_INVALID_DIFFERENT_RECORD, KIP-467).
"""

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from checks import BOOTSTRAP, GROUP, TOPIC, check, ok, poll_n  # e2e/python/checks.py, beside this file

BOTH = TOPIC + "-both"


def wait(futures):
    return {k: f.result(timeout=30) for k, f in futures.items()}


def produce(topic, records, linger_ms=0):
    """Sends records [(key, value)] to partition 0 and returns, in order,
    each one's (error code or None, offset)."""
    results = [None] * len(records)

    def report(i):
        def on_delivery(err, msg):
            results[i] = (err.code() if err is not None else None, msg.offset())
        return on_delivery

    prod = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": linger_ms, "retries": 0,
                     "enable.idempotence": False})
    # The partition's leader known first: records produced at once then
    # wait out linger.ms together and leave as one batch.
    prod.list_topics(topic, timeout=30)
    for i, (key, value) in enumerate(records):
        prod.produce(topic, value=value, key=key, partition=0, on_delivery=report(i))
    check(prod.flush(30) == 0, "flush left records undelivered")
    return results


def consume_all(topic, n):
    cons = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP + "-" + topic,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons.assign([TopicPartition(topic, 0, 0)])
    got = [(m.offset(), m.key(), m.value()) for m in poll_n(cons, n, topic)]
    lo, hi = cons.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    cons.close()
    return got, hi


admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
wait(admin.create_topics([NewTopic(TOPIC, 1, 1, config={"cleanup.policy": "compact"}),
                          NewTopic(BOTH, 1, 1, config={"cleanup.policy": "compact,delete"})],
                         operation_timeout=10))
ok("create_topics compact and compact,delete")

# One keyless record alone: refused, per message, with INVALID_RECORD.
for topic in (TOPIC, BOTH):
    res = produce(topic, [(None, b"no key")])
    check(res[0][0] == KafkaError.INVALID_RECORD, "%s keyless record: %r, want INVALID_RECORD" % (topic, res))
ok("keyless record refused: INVALID_RECORD")

# Keyed records and a tombstone (a key, no value) are kept.
res = produce(TOPIC, [(b"k1", b"v1"), (b"k2", b"v2"), (b"k1", None)], linger_ms=50)
check([r[0] for r in res] == [None, None, None], "keyed records and tombstone: %r" % res)
check([r[1] for r in res] == [0, 1, 2], "offsets %r" % res)
ok("keyed records and a tombstone stored at 0..2")

# One batch of keyed records with a keyless one in the middle: the whole
# batch is refused and nothing of it stored.
res = produce(TOPIC, [(b"k3", b"v3"), (None, b"nokey"), (b"k4", b"v4")], linger_ms=500)
codes = [r[0] for r in res]
check(codes[1] == KafkaError.INVALID_RECORD and all(c is not None for c in codes),
      "mixed batch: %r, want every message failed, the keyless one INVALID_RECORD" % res)
res = produce(TOPIC, [(b"k5", b"v5")])
check(res == [(None, 3)], "keyed record after the refused batch: %r, want offset 3" % res)
got, hi = consume_all(TOPIC, 4)
check(hi == 4 and [(o, k) for o, k, _ in got] == [(0, b"k1"), (1, b"k2"), (2, b"k1"), (3, b"k5")] and got[2][2] is None,
      "stored: %r (high watermark %d)" % (got, hi))
ok("mixed batch refused whole; stored %d records" % hi)

# The policy changed back to delete: keyless records are accepted again.
res_ = ConfigResource(ConfigResource.Type.TOPIC, TOPIC, set_config={"cleanup.policy": "delete"})
wait(admin.alter_configs([res_]))
res = produce(TOPIC, [(None, b"free again")])
check(res == [(None, 4)], "keyless record after cleanup.policy=delete: %r" % res)
ok("alter_configs cleanup.policy=delete: keyless record stored at 4")
