"""A librdkafka producer (confluent-kafka-python) with its defaults: no
idempotence, a million requests in flight, requests of up to 1 MB. It
enqueues SMALL records of 10 kB and then LARGE of 500 kB as fast as
librdkafka takes them, so its requests reach the gateway faster than the
store stores them; then it waits for every delivery report. A Kafka broker
slows such a producer through TCP; a gateway that closed its connection
would show here as a disconnect, a retry (this producer may then duplicate
or reorder) or a delivery error.

Run by e2e/pipelined_produce_test.go:

    /usr/bin/python3 e2e/python/pipelined_produce.py BOOTSTRAP TOPIC GROUP

Each record's value starts with its 6-digit index; the test reads them
back in order.
"""

import time

from confluent_kafka import Producer

from checks import BOOTSTRAP, TOPIC, check, ok  # e2e/python/checks.py, beside this file

SMALL, LARGE = 1000, 200

errors = []
disconnects = []


def on_delivery(err, _msg):
    if err is not None:
        errors.append(err)


def on_error(err):
    # Connection-level trouble (a reset, all brokers down) comes here.
    disconnects.append(err)


p = Producer({"bootstrap.servers": BOOTSTRAP, "error_cb": on_error, "message.max.bytes": 1000000})
start = time.monotonic()
n = 0
for count, size in ((SMALL, 10_000), (LARGE, 500_000)):
    pad = b"v" * (size - 6)
    for _ in range(count):
        value = b"%06d" % n + pad
        while True:
            try:
                p.produce(TOPIC, value, on_delivery=on_delivery)
                break
            except BufferError:  # librdkafka's queue is full: let it send
                p.poll(0.05)
        n += 1
    p.poll(0)
left = p.flush(120)
check(left == 0, "%d records not delivered after 120 s" % left)
check(not errors, "%d delivery errors, first %r" % (len(errors), errors[:1]))
check(not disconnects, "%d connection errors, first %r" % (len(disconnects), disconnects[:1]))
ok("produced %d pipelined, no disconnect (%.1f s)" % (n, time.monotonic() - start))
