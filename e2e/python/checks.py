"""What both client scripts (confluent_check.py, kafka_python_check.py)
share: their arguments and the OK/FAIL protocol e2e/python_kafkajs_test.go reads."""

import sys
import time

BOOTSTRAP, TOPIC, GROUP = sys.argv[1], sys.argv[2], sys.argv[3]
HOST, PORT = BOOTSTRAP.rsplit(":", 1)
N = 20  # records produced to each of partitions 0 and 1


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def ok(msg):
    print("OK " + msg, flush=True)


def poll_n(cons, n, what):
    """Polls cons (a confluent_kafka Consumer) until it gave n messages or a
    minute passed, and returns them; a consumer error fails."""
    got = []
    deadline = time.time() + 60
    while len(got) < n and time.time() < deadline:
        m = cons.poll(1.0)
        if m is None:
            continue
        if m.error():
            fail("consume %s: %r" % (what, m.error()))
        got.append(m)
    return got
