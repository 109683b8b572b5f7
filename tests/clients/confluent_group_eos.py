#!/usr/bin/python3
"""Exactly-once consume-transform-produce with confluent-kafka-python
(librdkafka) against caftx's Kafka listener, over the Northwind order
details: a group consumer (subscribe, read_committed) and a transactional
producer per process, the consumed offsets committed in each transaction
(send_offsets_to_transaction with the consumer's group metadata), every
few transactions aborted and the input read again.

Modes:
  load BOOTSTRAP TOPIC CSV
      Produces each data line of CSV (key: its order id) with an idempotent
      producer; prints {"loaded": N}.
  process BOOTSTRAP IN OUT GROUP TRANSACTIONAL_ID ABORT_EVERY
      Runs the loop until the group's committed offsets reach the end of
      every partition of IN; prints {"transactions": T, "aborts": A}.
  verify BOOTSTRAP OUT CSV
      Reads OUT to its end under read_committed and compares it with the
      sequential result of CSV; prints {"expected": E, "got": G,
      "missing": [...], "extra": [...]} (extra: duplicates or records
      that are not in the sequential result).
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def transform(line):
    """An order line as order_id,product_id,QUANTITYxUNIT_PRICE@DISCOUNT:
    text only, so that every client computes the same bytes
    (tests/clients/js/kafkajs_client.js has the same)."""
    order, product, price, quantity, discount = line.split(",")
    return "%s,%s,%sx%s@%s" % (order, product, quantity, price, discount)


def data_lines(csv):
    with open(csv, encoding="utf-8") as f:
        lines = [l.strip() for l in f if l.strip()]
    return lines[1:]


def load(bootstrap, topic, csv):
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors = []
    lines = data_lines(csv)
    for line in lines:
        producer.produce(topic, key=line.split(",")[0], value=line,
                         on_delivery=lambda err, msg: err and errors.append(str(err)))
        producer.poll(0)
    if producer.flush(60) != 0 or errors:
        raise KafkaException("load failed: %s" % errors[:3])
    print(json.dumps({"loaded": len(lines)}))


def end_offsets(consumer, topic):
    metadata = consumer.list_topics(topic, timeout=10)
    partitions = sorted(metadata.topics[topic].partitions)
    ends = {}
    for p in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ends[p] = high
    return ends


def all_committed(consumer, topic, ends):
    committed = consumer.committed([TopicPartition(topic, p) for p in ends], timeout=10)
    return all(tp.offset == ends[tp.partition] for tp in committed)


def process(bootstrap, source, sink, group, tid, abort_every):
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 20000,
    })
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": tid,
        "transaction.timeout.ms": 20000,
    })
    producer.init_transactions(30)
    consumer.subscribe([source])
    ends = end_offsets(consumer, source)
    transactions = aborts = 0
    idle_since = None
    while True:
        records = consumer.consume(num_messages=40, timeout=0.5)
        records = [r for r in records if r.error() is None]
        if not records:
            if idle_since is None:
                idle_since = time.time()
            if time.time() - idle_since > 1.0 and all_committed(consumer, source, ends):
                break
            continue
        idle_since = None
        producer.begin_transaction()
        for r in records:
            producer.produce(sink, key=r.key(), value=transform(r.value().decode()))
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
        transactions += 1
        if abort_every > 0 and transactions % abort_every == 0:
            producer.flush(30)  # on the log, so read_committed must skip it
            producer.abort_transaction(30)
            aborts += 1
            # Read the aborted input again from the committed offsets.
            for tp in consumer.committed(consumer.assignment(), timeout=10):
                consumer.seek(TopicPartition(tp.topic, tp.partition,
                                             tp.offset if tp.offset >= 0 else 0))
        else:
            producer.commit_transaction(30)
    consumer.close()
    print(json.dumps({"transactions": transactions, "aborts": aborts}))


def verify(bootstrap, sink, csv):
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "verify-" + sink,
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
    })
    ends = end_offsets(consumer, sink)
    consumer.assign([TopicPartition(sink, p, 0) for p in ends])
    got, left = [], {p: e for p, e in ends.items() if e > 0}
    deadline = time.time() + 60
    while left and time.time() < deadline:
        for r in consumer.consume(num_messages=500, timeout=0.5):
            if r.error() is not None:
                continue
            got.append(r.value().decode())
            if r.offset() + 1 >= ends[r.partition()]:
                left.pop(r.partition(), None)
        # The last records below the end may be markers: done once the
        # position passed the end.
        for tp in consumer.position([TopicPartition(sink, p) for p in list(left)]):
            if tp.offset >= ends[tp.partition]:
                left.pop(tp.partition, None)
    consumer.close()
    expected = sorted(transform(l) for l in data_lines(csv))
    got.sort()
    missing, extra = [], []
    i = j = 0
    while i < len(expected) or j < len(got):
        if j >= len(got) or (i < len(expected) and expected[i] < got[j]):
            missing.append(expected[i])
            i += 1
        elif i >= len(expected) or got[j] < expected[i]:
            extra.append(got[j])
            j += 1
        else:
            i += 1
            j += 1
    print(json.dumps({"expected": len(expected), "got": len(got),
                      "missing": missing[:10], "extra": extra[:10]}))


def main():
    mode = sys.argv[1]
    if mode == "load":
        load(*sys.argv[2:5])
    elif mode == "process":
        process(*sys.argv[2:7], int(sys.argv[7]))
    elif mode == "verify":
        verify(*sys.argv[2:5])
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("KafkaException: %s" % e, file=sys.stderr)
        sys.exit(1)
