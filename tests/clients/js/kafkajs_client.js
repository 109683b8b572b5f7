#!/usr/bin/env node
// KafkaJS 2.2.4 against caftx's Kafka listener. Prints one JSON line with
// what it did; exits 1 on an error (its message on stderr).
//
// Modes:
//   produce-txn BOOTSTRAP TOPIC TRANSACTIONAL_ID TRANSACTIONS
//       Transactions of 5 records each, committed and aborted in turn;
//       prints {"committed": [...], "aborted": [...]}.
//   consume BOOTSTRAP TOPIC GROUP EXPECTED
//       A group consumer (read_committed, KafkaJS's default) from the
//       beginning until EXPECTED records came and 2 s passed without more;
//       prints {"values": [...]}.
//   eos BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID ABORT_EVERY
//       Consume-transform-produce: every 40 records of a fetched batch are
//       transformed (a Northwind order line, as
//       tests/clients/confluent_group_eos.py) and written in one transaction
//       with their offsets (sendOffsets); every ABORT_EVERY-th transaction
//       aborts and its records are read again. Ends when the group's offsets reach the end of IN;
//       prints {"transactions": T, "aborts": A}.
'use strict'

const { Kafka, logLevel } = require('kafkajs')

function kafka(bootstrap, clientId) {
  return new Kafka({
    clientId,
    brokers: bootstrap.split(','),
    logLevel: logLevel.ERROR,
    retry: { retries: 10 },
  })
}

// As transform() of tests/clients/confluent_group_eos.py: text only.
function transform(line) {
  const [order, product, price, quantity, discount] = line.split(',')
  return `${order},${product},${quantity}x${price}@${discount}`
}

async function produceTxn(bootstrap, topic, tid, transactions) {
  const producer = kafka(bootstrap, 'kafkajs-producer').producer({
    transactionalId: tid,
    maxInFlightRequests: 1,
    idempotent: true,
  })
  await producer.connect()
  const committed = []
  const aborted = []
  for (let t = 0; t < transactions; ++t) {
    const commit = t % 2 === 0
    const txn = await producer.transaction()
    const values = []
    for (let j = 0; j < 5; ++j)
      values.push(`${commit ? 'c' : 'a'}${t}-${j}`)
    await txn.send({ topic, messages: values.map((v, j) => ({ key: `k${j}`, value: v })) })
    if (commit) {
      await txn.commit()
      committed.push(...values)
    } else {
      await txn.abort()
      aborted.push(...values)
    }
  }
  await producer.disconnect()
  return { committed, aborted }
}

async function consume(bootstrap, topic, group, expected) {
  const consumer = kafka(bootstrap, 'kafkajs-consumer').consumer({
    groupId: group,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
  })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const values = []
  let last = Date.now()
  await consumer.run({
    eachMessage: async ({ message }) => {
      values.push(message.value.toString())
      last = Date.now()
    },
  })
  const deadline = Date.now() + 60000
  while (Date.now() < deadline && (values.length < expected || Date.now() - last < 2000))
    await new Promise(resolve => setTimeout(resolve, 100))
  await consumer.disconnect()
  return { values }
}

async function groupAtEnd(admin, group, topic) {
  const ends = await admin.fetchTopicOffsets(topic)
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  const at = {}
  for (const p of committed.partitions) at[p.partition] = p.offset
  return ends.every(e => at[e.partition] === e.high)
}

async function eos(bootstrap, source, sink, group, tid, abortEvery) {
  const client = kafka(bootstrap, 'kafkajs-eos')
  const admin = client.admin()
  await admin.connect()
  const producer = client.producer({ transactionalId: tid, maxInFlightRequests: 1, idempotent: true })
  await producer.connect()
  const consumer = client.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [source], fromBeginning: true })
  let transactions = 0
  let aborts = 0
  let failure = null
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isStale }) => {
      // One transaction per 40 records of the fetched batch.
      for (let from = 0; from < batch.messages.length; from += 40) {
        if (isStale() || failure)
          return
        const chunk = batch.messages.slice(from, from + 40)
        try {
          const txn = await producer.transaction()
          await txn.send({
            topic: sink,
            messages: chunk.map(m => ({ key: m.key, value: transform(m.value.toString()) })),
          })
          const next = (BigInt(chunk[chunk.length - 1].offset) + 1n).toString()
          await txn.sendOffsets({
            consumerGroupId: group,
            topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
          })
          transactions += 1
          if (abortEvery > 0 && transactions % abortEvery === 0) {
            await txn.abort()
            aborts += 1
            // Read the chunk again.
            consumer.seek({ topic: batch.topic, partition: batch.partition, offset: chunk[0].offset })
            return
          }
          await txn.commit()
          for (const m of chunk) resolveOffset(m.offset)
          await heartbeat()
        } catch (e) {
          failure = failure || e
        }
      }
    },
  })
  const deadline = Date.now() + 180000
  while (!failure && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 500))
    if (await groupAtEnd(admin, group, source)) break
  }
  await consumer.disconnect()
  await producer.disconnect()
  await admin.disconnect()
  if (failure) throw failure
  if (Date.now() >= deadline) throw new Error('the group did not reach the end of ' + source)
  return { transactions, aborts }
}

async function main() {
  const [mode, ...args] = process.argv.slice(2)
  let out
  if (mode === 'produce-txn') out = await produceTxn(args[0], args[1], args[2], parseInt(args[3], 10))
  else if (mode === 'consume') out = await consume(args[0], args[1], args[2], parseInt(args[3], 10))
  else if (mode === 'eos')
    out = await eos(args[0], args[1], args[2], args[3], args[4], parseInt(args[5], 10))
  else throw new Error('unknown mode ' + mode)
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().then(
  () => process.exit(0),
  e => {
    process.stderr.write(`${e.stack || e}\n`)
    process.exit(1)
  }
)
