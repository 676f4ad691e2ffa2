"""confluent-kafka-python (librdkafka) against the gateway: a topic with
message.timestamp.type=LogAppendTime. The delivery report and the consumer
see the broker's append time with type LogAppendTime, whatever timestamp
the producer set, and offsets_for_times searches by it; a CreateTime
topic altered to LogAppendTime keeps its earlier records' CreateTime.
Every step asserts what it got and prints one "OK ..." line; the first
wrong answer prints "FAIL ..." and exits 1.

Run by e2e/topic_policies_test.go:

    /usr/bin/python3 e2e/python/log_append_time_check.py BOOTSTRAP TOPIC GROUP

TOPIC is a LogAppendTime topic of one partition made before (by
kafka-topics); TOPIC-alter is made here.
"""

import time

from confluent_kafka import (TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from checks import BOOTSTRAP, GROUP, TOPIC, check, fail, ok, poll_n  # e2e/python/checks.py, beside this file

ALTER = TOPIC + "-alter"
OLD = 1_000_000_000_000  # 2001-09-09: the producer's timestamp, never now


def now_ms():
    return int(time.time() * 1000)


def wait(futures):
    return {k: f.result(timeout=30) for k, f in futures.items()}


def produce(topic, n, ts):
    """Sends n records with timestamp ts to partition 0 in one batch and
    returns each one's (offset, timestamp type, timestamp) as the delivery
    report has it."""
    results = [None] * n

    def report(i):
        def on_delivery(err, msg):
            if err is not None:
                fail("delivery to %s: %r" % (topic, err))
            results[i] = (msg.offset(),) + msg.timestamp()
        return on_delivery

    prod = Producer({"bootstrap.servers": BOOTSTRAP, "linger.ms": 200})
    for i in range(n):
        prod.produce(topic, value=b"v%d" % i, key=b"k%d" % i, partition=0, timestamp=ts, on_delivery=report(i))
    check(prod.flush(30) == 0, "flush left records undelivered")
    return results


def consume(topic, n):
    """Reads n records of partition 0 from offset 0: (offset, type, timestamp)."""
    cons = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons.assign([TopicPartition(topic, 0, 0)])
    return cons, [(m.offset(),) + m.timestamp() for m in poll_n(cons, n, topic)]


def offset_for(cons, topic, ts):
    return cons.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=30)[0].offset


# The topic kafka-topics made: every record of a batch gets the append
# time, in the delivery report and at the consumer.
# (librdkafka may send the three in more than one request: each request's
# batch has an append time of its own.)
before = now_ms()
acked = produce(TOPIC, 3, OLD)
after = now_ms()
check([a[:2] for a in acked] == [(i, TIMESTAMP_LOG_APPEND_TIME) for i in range(3)] and
      all(before <= a[2] <= after for a in acked),
      "delivery reports %r, want LogAppendTime within [%d, %d]" % (acked, before, after))
t = acked[0][2]
ok("delivery reports LogAppendTime")

cons, got = consume(TOPIC, 3)
check(got == acked, "consumed %r, want %r" % (got, acked))
ok("consumed 3 with LogAppendTime")

# ListOffsets by timestamp searches the append time: the producer's own
# timestamp (long before) finds offset 0, and so does the append time.
check(offset_for(cons, TOPIC, OLD + 1) == 0, "offsets_for_times(producer ts + 1)")
check(offset_for(cons, TOPIC, t) == 0, "offsets_for_times(append time)")
check(offset_for(cons, TOPIC, after + 60_000) == -1, "offsets_for_times(a minute after)")
ok("offsets_for_times by append time")
cons.close()

# A CreateTime topic altered to LogAppendTime: the records before keep
# their CreateTime, the ones after get the append time.
admin = AdminClient({"bootstrap.servers": BOOTSTRAP})
wait(admin.create_topics([NewTopic(ALTER, 1, 1)], operation_timeout=10))
first = produce(ALTER, 1, OLD)
check(first == [(0, TIMESTAMP_CREATE_TIME, OLD)], "CreateTime delivery report %r" % first)
wait(admin.alter_configs([ConfigResource(ConfigResource.Type.TOPIC, ALTER,
                                         set_config={"message.timestamp.type": "LogAppendTime"})]))
before = now_ms()
second = produce(ALTER, 1, OLD)
check(second[0][1] == TIMESTAMP_LOG_APPEND_TIME and before <= second[0][2] <= now_ms(),
      "LogAppendTime delivery report after alter_configs %r" % second)
cons, got = consume(ALTER, 2)
check(got == [(0, TIMESTAMP_CREATE_TIME, OLD), second[0]], "consumed %r" % got)
cons.close()
ok("alter_configs LogAppendTime: CreateTime before, LogAppendTime after")
