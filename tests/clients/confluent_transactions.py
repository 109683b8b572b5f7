#!/usr/bin/python3
"""A transactional producer of confluent-kafka-python (librdkafka) against
a caftx node's Kafka listener: several transactions from one producer,
committed and aborted in turn, each with its consumer group's offsets
(send_offsets_to_transaction). Prints one JSON line with what it did.

Usage: confluent_transactions.py BOOTSTRAP TOPIC SOURCE_TOPIC GROUP TRANSACTIONAL_ID
"""
import json
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, topic, source, group, tid = sys.argv[1:6]
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "transactional.id": tid,
        "transaction.timeout.ms": 60000,
    })
    producer.init_transactions(30)
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
    })
    committed, aborted = [], []
    for t in range(6):
        commit = t % 2 == 0
        producer.begin_transaction()
        values = []
        for j in range(5):
            value = ("c" if commit else "a") + "%d-%d" % (t, j)
            producer.produce(topic, key="k%d" % j, value=value, partition=j % 3)
            values.append(value)
        producer.send_offsets_to_transaction(
            [TopicPartition(source, 0, 10 * (t + 1))], consumer.consumer_group_metadata(), 30)
        if commit:
            producer.commit_transaction(30)
            committed += values
        else:
            # On the log first, so that read_committed has something to
            # skip (abort_transaction would purge what is still queued).
            if producer.flush(30) != 0:
                raise KafkaException("records still queued after 30 s")
            producer.abort_transaction(30)
            aborted += values
    consumer.close()
    print(json.dumps({"committed": committed, "aborted": aborted}))


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("KafkaException: %s" % e, file=sys.stderr)
        sys.exit(1)
