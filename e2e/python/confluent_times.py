"""confluent-kafka-python (librdkafka) finds records by time in one batch
whose records span more than the 71.6 minutes an Iggy batch's timestamp
deltas hold (docs/MAPPING.md, "Timestamps and the clamp"): offsets_for_times
answers what a Kafka broker answers, the earliest offset whose timestamp is
at or after the one asked for, and a consumer reads the records' own
timestamps. Prints one "OK ..." line per step, "FAIL ..." and exit 1 on the
first wrong answer.

Run by e2e/python_kafkajs_test.go:

    /usr/bin/python3 e2e/python/confluent_times.py BOOTSTRAP TOPIC GROUP
"""

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from checks import BOOTSTRAP, GROUP, TOPIC, check, ok  # e2e/python/checks.py, beside this file

MINUTE = 60_000
# Minutes after the first record of offsets 0..4; in the past, so the
# broker's append time is after every one of them.
AT = [0, 1, 80, 85, 2]
base = int(time.time() * 1000) - 100 * MINUTE

admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
for f in admin.create_topics([NewTopic(TOPIC, 1, 1, config={"retention.ms": "-1"})], operation_timeout=10).values():
    f.result(timeout=30)

# One batch: a long linger keeps librdkafka from sending before flush,
# which sends everything queued for the partition at once.
delivered = []


def on_delivery(err, msg):
    check(err is None, "delivery: %s" % err)
    delivered.append((msg.offset(), msg.timestamp()[1]))


p = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 60000, "batch.num.messages": 1000})
for i, m in enumerate(AT):
    p.produce(TOPIC, value=b"v%d" % i, partition=0, timestamp=base + m * MINUTE, on_delivery=on_delivery)
check(p.flush(30) == 0, "messages left after flush")
check(sorted(delivered) == [(i, base + m * MINUTE) for i, m in enumerate(AT)], "delivered %r" % delivered)
ok("produced %d records spanning %d minutes in one batch" % (len(AT), max(AT)))

c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP, "enable.auto.commit": False})
for after, want in (
    (0, 0),
    (MINUTE // 2, 1),
    (75 * MINUTE, 2),
    (80 * MINUTE, 2),
    (80 * MINUTE + 1, 3),
    (85 * MINUTE, 3),
    (85 * MINUTE + 1, -1),
):
    got = c.offsets_for_times([TopicPartition(TOPIC, 0, base + after)], timeout=30)[0]
    check(got.error is None and got.offset == want,
          "offsets_for_times(first + %d ms) = %d (%s), want %d" % (after, got.offset, got.error, want))
ok("offsets_for_times inside the span: the earliest offset at or after each time")

c.assign([TopicPartition(TOPIC, 0, 2)])
seen = []
deadline = time.time() + 30
while len(seen) < 3 and time.time() < deadline:
    msg = c.poll(1.0)
    if msg is None:
        continue
    check(msg.error() is None, "consume: %s" % msg.error())
    seen.append((msg.offset(), msg.timestamp()[1]))
c.close()
check(seen == [(i, base + AT[i] * MINUTE) for i in (2, 3, 4)], "consumed %r" % seen)
ok("consumed from offset 2 with the records' own timestamps")
