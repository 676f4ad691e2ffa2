"""confluent-kafka-python (librdkafka's transactional producer) against a
gateway started with --transactions enabled: a transaction committed, one
aborted and one committed with the group's offsets sent to it
(send_offsets_to_transaction); a read_committed consumer (librdkafka's
default isolation) sees exactly the committed records, a read_uncommitted
one every record. Every step asserts what it got and prints one "OK ..."
line; the first wrong answer prints "FAIL ..." and exits 1.

Run by e2e/txn_clients_test.go on a topic of 2 partitions it created:

    /usr/bin/python3 e2e/python/confluent_txn_check.py BOOTSTRAP TOPIC GROUP
"""

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from checks import BOOTSTRAP, GROUP, N, TOPIC, check, fail, ok, poll_n  # e2e/python/checks.py, beside this file

prod = Producer({"bootstrap.servers": BOOTSTRAP, "transactional.id": TOPIC + "-txn",
                 "transaction.timeout.ms": 60000})
try:
    prod.init_transactions(30)
except KafkaException as e:
    fail("init_transactions: %r" % e)
ok("init_transactions")


def send(tag):
    """One transaction's records: N to each of partitions 0 and 1."""
    prod.begin_transaction()
    errs = []
    for i in range(2 * N):
        prod.produce(TOPIC, value=("%s-%d" % (tag, i)).encode(), partition=i % 2,
                     on_delivery=lambda err, _m: err and errs.append(err))
    prod.flush(30)
    check(not errs, "produce %s: %r" % (tag, errs))


send("committed")
prod.commit_transaction(30)
ok("committed %d" % (2 * N))

send("aborted")
prod.abort_transaction(30)
ok("aborted %d" % (2 * N))

# The third transaction also commits the group's offsets (AddOffsetsToTxn,
# TxnOffsetCommit): they become the group's committed offsets only at commit.
send("last")
grp = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP, "enable.auto.commit": False})
prod.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 7), TopicPartition(TOPIC, 1, 9)],
                                 grp.consumer_group_metadata(), 30)
prod.commit_transaction(30)
got = grp.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=30)
check([tp.offset for tp in got] == [7, 9], "group offsets after commit %r" % [(tp.partition, tp.offset) for tp in got])
grp.close()
ok("committed %d with the group's offsets [7, 9]" % (2 * N))


def read(iso, n):
    c = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP + "-" + iso, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "isolation.level": iso, "enable.partition.eof": False})
    c.assign([TopicPartition(TOPIC, 0, 0), TopicPartition(TOPIC, 1, 0)])
    msgs = poll_n(c, n, iso)
    # Nothing beyond n: a short poll more.
    extra = c.poll(2.0)
    if extra is not None and not extra.error():
        msgs.append(extra)
    # The consumer's position is past the last marker: the end offset.
    hw = [c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1] for p in (0, 1)]
    c.close()
    return [m.value().decode() for m in msgs], hw


committed, hw = read("read_committed", 4 * N)
check(len(committed) == 4 * N, "read_committed got %d records, want %d: %r" % (len(committed), 4 * N, committed))
check(not [v for v in committed if v.startswith("aborted")], "read_committed returned aborted records: %r" % committed)
check(sorted(committed) == sorted(["%s-%d" % (t, i) for t in ("committed", "last") for i in range(2 * N)]),
      "read_committed records %r" % committed)
# Each partition holds N records of each of the 3 transactions and one
# marker after each.
check(hw == [3 * N + 3, 3 * N + 3], "high watermarks %r, want %d (records and 3 markers)" % (hw, 3 * N + 3))
ok("read_committed %d, no aborted record; high watermarks %r" % (len(committed), hw))

everything, _ = read("read_uncommitted", 6 * N)
check(len(everything) == 6 * N, "read_uncommitted got %d records, want %d" % (len(everything), 6 * N))
ok("read_uncommitted %d" % len(everything))
