// kafkajs (from npm, e2e/js/package-lock.json) against the gateway: admin
// calls, a keyed round trip with headers, DeleteRecords and a consumer
// group. Every step asserts what it got and prints one "OK ..." line; the
// first wrong answer prints "FAIL ..." and exits 1.
//
// Run by e2e/python_kafkajs_test.go after `npm ci` in e2e/js:
//
//	node e2e/js/kafkajs_check.js BOOTSTRAP TOPIC GROUP
//
// kafkajs 2.2.4 has no IncrementalAlterConfigs: it alters with
// AlterConfigs.
'use strict'

const assert = require('node:assert/strict')
const { Kafka, ConfigResourceTypes, ConfigSource, Partitioners, logLevel } = require('kafkajs')

const [bootstrap, topic, group] = process.argv.slice(2)
const [host, port] = [bootstrap.slice(0, bootstrap.lastIndexOf(':')), Number(bootstrap.slice(bootstrap.lastIndexOf(':') + 1))]
const N = 20 // records produced to each of partitions 0 and 1
const DELETED = 3 // DeleteRecords up to this offset of partition 0

const ok = (msg) => console.log('OK ' + msg)

const kafka = new Kafka({ clientId: 'kafkajs-check', brokers: [bootstrap], logLevel: logLevel.WARN, retry: { retries: 3 } })

async function describe (admin) {
  const { resources } = await admin.describeConfigs({
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }],
    includeSynonyms: false
  })
  assert.equal(resources.length, 1)
  assert.equal(resources[0].errorCode, 0, `describeConfigs error ${resources[0].errorMessage}`)
  return Object.fromEntries(resources[0].configEntries.map((e) => [e.configName, e]))
}

// consumeAll runs a group member until want records arrived, returns them
// sorted and the still-running consumer.
async function consumeAll (groupId, want) {
  const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 500 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = []
  let done
  const all = new Promise((resolve) => { done = resolve })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({
        partition,
        offset: Number(message.offset),
        key: message.key.toString(),
        value: message.value.toString(),
        headers: Object.fromEntries(Object.entries(message.headers).map(([k, v]) => [k, v.toString()]))
      })
      if (got.length === want) done()
    }
  })
  const timeout = new Promise((_resolve, reject) => setTimeout(() => reject(new Error(`consumed ${got.length} of ${want} in 60s`)), 60000).unref())
  await Promise.race([all, timeout])
  got.sort((a, b) => a.partition - b.partition || a.offset - b.offset)
  return { consumer, got }
}

async function main () {
  const admin = kafka.admin()
  await admin.connect()

  // Metadata: one broker, this gateway, also the controller.
  const cluster = await admin.describeCluster()
  assert.deepEqual(cluster.brokers.map((b) => [b.nodeId, b.host, b.port]), [[1, host, port]])
  assert.equal(cluster.controller, 1)
  assert.equal(cluster.clusterId, 'e2e')
  ok(`describeCluster broker 1 ${host}:${port} controller 1`)

  // CreateTopics with a config; the same again answers false (exists).
  assert.equal(await admin.createTopics({
    topics: [{ topic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
    waitForLeaders: true
  }), true)
  assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }), false)
  ok('createTopics 2 partitions; again: exists')

  // DescribeConfigs: the value set, Kafka's defaults marked as defaults.
  let cfg = await describe(admin)
  assert.equal(cfg['retention.ms'].configValue, '3600000')
  assert.equal(cfg['retention.ms'].isDefault, false)
  assert.equal(cfg['retention.ms'].configSource, ConfigSource.TOPIC_CONFIG)
  for (const [name, want] of [['cleanup.policy', 'delete'], ['retention.bytes', '-1']]) {
    assert.equal(cfg[name].configValue, want, name)
    assert.equal(cfg[name].isDefault, true, name)
    assert.equal(cfg[name].configSource, ConfigSource.DEFAULT_CONFIG, name)
  }
  ok('describeConfigs retention.ms=3600000 dynamic; cleanup.policy=delete default')

  // AlterConfigs (not incremental): the configs become exactly those
  // given, what is left out returns to its default.
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '7200000' }, { name: 'segment.ms', value: '600000' }] }]
  })
  cfg = await describe(admin)
  assert.equal(cfg['retention.ms'].configValue, '7200000')
  assert.equal(cfg['segment.ms'].configValue, '600000')
  assert.equal(cfg['segment.ms'].configSource, ConfigSource.TOPIC_CONFIG)
  ok('alterConfigs retention.ms=7200000 segment.ms=600000')

  await assert.rejects(admin.alterConfigs({
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'made.up', value: '1' }] }]
  }), (e) => e.type === 'INVALID_CONFIG' || (e.cause && e.cause.type === 'INVALID_CONFIG'))
  ok('alterConfigs unknown config refused: INVALID_CONFIG')

  // CreatePartitions: 2 -> 4, seen in Metadata.
  await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
  const md = await admin.fetchTopicMetadata({ topics: [topic] })
  const parts = md.topics[0].partitions.sort((a, b) => a.partitionId - b.partitionId)
  assert.deepEqual(parts.map((p) => [p.partitionId, p.leader, p.replicas, p.isr]),
    [0, 1, 2, 3].map((i) => [i, 1, [1], [1]]))
  ok('createPartitions 4')

  // Produce: keyed records with headers to partitions 0 and 1, each
  // acknowledged.
  const producer = kafka.producer({ idempotent: true, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const want = []
  for (let i = 0; i < 2 * N; i++) {
    const r = { partition: i % 2, offset: Math.floor(i / 2), key: `key-${i % 3}`, value: `value ${i} ünïcode`, headers: { trace: `t-${i}`, src: 'kafkajs' } }
    want.push(r)
    const acks = await producer.send({ topic, acks: -1, messages: [{ partition: r.partition, key: r.key, value: r.value, headers: r.headers }] })
    assert.equal(acks.length, 1)
    assert.equal(acks[0].errorCode, 0)
    assert.equal(Number(acks[0].baseOffset), r.offset)
  }
  await producer.disconnect()
  want.sort((a, b) => a.partition - b.partition || a.offset - b.offset)
  ok(`produced ${want.length}`)

  // A consumer group: read every record back identical, commit; list and
  // describe the group while its member is live.
  let { consumer, got } = await consumeAll(group, want.length)
  assert.deepEqual(got, want)
  await consumer.commitOffsets([0, 1].map((partition) => ({ topic, partition, offset: String(N) })))
  const { groups } = await admin.listGroups()
  assert.deepEqual(groups.filter((g) => g.groupId === group), [{ groupId: group, protocolType: 'consumer' }])
  const desc = (await admin.describeGroups([group])).groups
  assert.equal(desc.length, 1)
  assert.equal(desc[0].errorCode, 0)
  assert.equal(desc[0].state, 'Stable')
  assert.equal(desc[0].protocolType, 'consumer')
  assert.equal(desc[0].members.length, 1)
  assert.equal(desc[0].members[0].clientId, 'kafkajs-check')
  assert.ok(desc[0].members[0].memberAssignment.includes(Buffer.from(topic)), 'assignment names the topic')
  await consumer.disconnect()
  const committed = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  assert.deepEqual(committed[0].partitions.sort((a, b) => a.partition - b.partition).map((p) => p.offset), [String(N), String(N), '-1', '-1'])
  ok(`consumed ${got.length} in group; listGroups, describeGroups Stable 1 member; committed [${N}, ${N}]`)

  // DeleteRecords: the low watermark moves, a new group starts there.
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: String(DELETED) }] })
  const offsets = (await admin.fetchTopicOffsets(topic)).sort((a, b) => a.partition - b.partition)
  assert.deepEqual(offsets.map((o) => [o.partition, o.low, o.high]),
    [[0, String(DELETED), String(N)], [1, '0', String(N)], [2, '0', '0'], [3, '0', '0']])
  ;({ consumer, got } = await consumeAll(group + '-after-delete', want.length - DELETED))
  await consumer.disconnect()
  assert.deepEqual(got, want.filter((r) => r.partition !== 0 || r.offset >= DELETED))
  ok(`deleteTopicRecords low watermark ${DELETED}; a new group reads from it`)

  // DeleteGroups of that group, now without members: no longer listed.
  const deleted = await admin.deleteGroups([group + '-after-delete'])
  assert.deepEqual(deleted.map((d) => [d.groupId, d.errorCode]), [[group + '-after-delete', 0]])
  const left = (await admin.listGroups()).groups.map((g) => g.groupId).sort()
  assert.deepEqual(left, [group])
  ok('deleteGroups; listGroups no longer has it')

  await admin.disconnect()
}

main().catch((e) => {
  console.log('FAIL ' + (e.stack || e))
  process.exit(1)
})
