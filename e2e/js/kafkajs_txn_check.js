// kafkajs's transactional producer against a gateway started with
// --transactions enabled: a transaction committed, one aborted, and one
// committed with the group's offsets (sendOffsets); a read_committed
// consumer (kafkajs's default, readUncommitted false) sees exactly the
// committed records, a readUncommitted one every record. Every step asserts
// what it got and prints one "OK ..." line; the first wrong answer prints
// "FAIL ..." and exits 1.
//
// Run by e2e/txn_clients_test.go on a topic of 2 partitions it created:
//
//	node e2e/js/kafkajs_txn_check.js BOOTSTRAP TOPIC GROUP
'use strict'

const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, group] = process.argv.slice(2)
const N = 20 // records of each transaction to each of partitions 0 and 1

const ok = (msg) => console.log('OK ' + msg)

const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: [bootstrap], logLevel: logLevel.WARN, retry: { retries: 5 } })

// send runs one transaction of 2N records and returns it, not yet ended.
async function send (producer, tag) {
  const txn = await producer.transaction()
  for (const partition of [0, 1]) {
    const messages = []
    for (let i = 0; i < N; i++) messages.push({ partition, value: `${tag}-${partition}-${i}` })
    await txn.send({ topic, acks: -1, messages })
  }
  return txn
}

// readAll reads both partitions from the start in a fresh group until want
// records arrived, then waits a moment more for any beyond want.
async function readAll (readUncommitted, want) {
  const consumer = kafka.consumer({ groupId: `${group}-${readUncommitted ? 'uncommitted' : 'committed'}`, maxWaitTimeInMs: 200, readUncommitted })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    setTimeout(() => reject(new Error(`consumed ${got.length} of ${want} in 60s: ${got}`)), 60000).unref()
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === want) resolve()
      }
    }).catch(reject)
  })
  await new Promise((resolve) => setTimeout(resolve, 1000))
  await consumer.disconnect()
  return got
}

async function main () {
  const producer = kafka.producer({ transactionalId: `${topic}-txn`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60000 })
  await producer.connect()
  ok('connect (InitProducerId with a transactional id)')

  await (await send(producer, 'committed')).commit()
  ok(`committed ${2 * N}`)
  await (await send(producer, 'aborted')).abort()
  ok(`aborted ${2 * N}`)

  const txn = await send(producer, 'last')
  await txn.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: '7' }, { partition: 1, offset: '9' }] }] })
  await txn.commit()
  await producer.disconnect()
  const admin = kafka.admin()
  await admin.connect()
  const offs = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  assert.deepEqual(offs[0].partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset), ['7', '9'])
  // Each partition: N records of each of 3 transactions and a marker after each.
  const ends = (await admin.fetchTopicOffsets(topic)).sort((a, b) => a.partition - b.partition).map((o) => o.high)
  assert.deepEqual(ends, [String(3 * N + 3), String(3 * N + 3)])
  await admin.disconnect()
  ok(`committed ${2 * N} with the group's offsets [7, 9]; ends [${ends}]`)

  const committed = await readAll(false, 4 * N)
  const want = []
  for (const tag of ['committed', 'last']) for (const p of [0, 1]) for (let i = 0; i < N; i++) want.push(`${tag}-${p}-${i}`)
  assert.deepEqual(committed.slice().sort(), want.sort())
  ok(`read_committed ${committed.length}, no aborted record`)

  const everything = await readAll(true, 6 * N)
  assert.equal(everything.length, 6 * N)
  ok(`read_uncommitted ${everything.length}`)
}

main().catch((e) => {
  console.log('FAIL ' + (e.stack || e))
  process.exit(1)
})
