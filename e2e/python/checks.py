"""What both client scripts (confluent_check.py, kafka_python_check.py)
share: their arguments and the OK/FAIL protocol e2e/python_kafkajs_test.go reads."""

import sys

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
