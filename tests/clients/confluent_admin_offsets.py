#!/usr/bin/python3
"""confluent-kafka-python (librdkafka) against a caftx node's Kafka
listener: its AdminClient creates a topic (and gets Kafka's errors for a
second create and a bad name), an idempotent producer writes to it, a
consumer with manual assignment reads everything back and commits its
offsets outside group management, reads them
back with committed(), and the AdminClient deletes the topic. Prints one
JSON line with what it saw.

Usage: confluent_admin_offsets.py BOOTSTRAP TOPIC GROUP
"""
import json
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create(admin, topic, partitions, replication):
    """The error name of creating `topic` ("NO_ERROR" on success)."""
    future = admin.create_topics([NewTopic(topic, partitions, replication)],
                                 operation_timeout=30)[topic]
    try:
        future.result(60)
        return "NO_ERROR"
    except KafkaException as e:
        return e.args[0].name()


def main():
    bootstrap, topic, group = sys.argv[1:4]
    out = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out["create"] = create(admin, topic, 3, 3)
    out["create_again"] = create(admin, topic, 3, 3)
    out["create_bad_name"] = create(admin, "bad/name", 1, 1)

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(str(err))

    for i in range(30):
        producer.produce(topic, key="k%d" % i, value="v%d" % i, partition=i % 3,
                         on_delivery=delivered)
    out["unflushed"] = producer.flush(30)
    out["delivery_errors"] = errors

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values = []
    for _ in range(300):
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            values.append(msg.value().decode())
        if len(values) >= 30:
            break
    out["consumed"] = sorted(values)
    consumer.commit(offsets=[TopicPartition(topic, p, 10 + p) for p in range(3)],
                    asynchronous=False)
    out["committed"] = {str(tp.partition): tp.offset for tp in
                        consumer.committed([TopicPartition(topic, p) for p in range(3)], 30)}
    consumer.close()

    future = admin.delete_topics([topic], operation_timeout=30)[topic]
    future.result(60)
    out["listed_after_delete"] = topic in admin.list_topics(timeout=30).topics
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("KafkaException: %s" % e, file=sys.stderr)
        sys.exit(1)
