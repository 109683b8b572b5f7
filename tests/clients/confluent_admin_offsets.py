#!/usr/bin/python3
"""confluent-kafka-python (librdkafka) against a caftx node's Kafka
listener: its AdminClient creates a topic (and gets Kafka's errors for a
second create and a bad name), grows it from 3 to 5 partitions and to 6
with a given replica assignment (and gets Kafka's errors for a count that
is no increase, an unknown topic and an unknown node), describes the
topic's and node 1's configs (and an unknown topic's), an idempotent
producer writes to all six partitions, a
consumer with manual assignment reads everything back and commits its
offsets outside group management, reads them
back with committed(), and the AdminClient deletes the topic. Prints one
JSON line with what it saw.

Usage: confluent_admin_offsets.py BOOTSTRAP TOPIC GROUP
"""
import json
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic


def create(admin, topic, partitions, replication):
    """The error name of creating `topic` ("NO_ERROR" on success)."""
    future = admin.create_topics([NewTopic(topic, partitions, replication)],
                                 operation_timeout=30)[topic]
    try:
        future.result(60)
        return "NO_ERROR"
    except KafkaException as e:
        return e.args[0].name()


def grow(admin, topic, count, assignment=None, validate_only=False):
    """The error name of growing `topic` to `count` partitions."""
    new = (NewPartitions(topic, count) if assignment is None
           else NewPartitions(topic, count, replica_assignment=assignment))
    future = admin.create_partitions([new], operation_timeout=30,
                                     validate_only=validate_only)[topic]
    try:
        future.result(60)
        return "NO_ERROR"
    except KafkaException as e:
        return e.args[0].name()


def describe(admin, kind, name, keys):
    """`keys`' [value, source, read-only, synonym names] of resource `name`
    (DescribeConfigs), or the error name."""
    resource = ConfigResource(kind, name)
    future = admin.describe_configs([resource], request_timeout=30)[resource]
    try:
        entries = future.result(60)
    except KafkaException as e:
        return e.args[0].name()
    return {k: [entries[k].value, int(entries[k].source), entries[k].is_read_only,
                sorted(entries[k].synonyms)] for k in keys if k in entries}


def main():
    bootstrap, topic, group = sys.argv[1:4]
    out = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out["create"] = create(admin, topic, 3, 3)
    out["create_again"] = create(admin, topic, 3, 3)
    out["create_bad_name"] = create(admin, "bad/name", 1, 1)
    out["topic_configs"] = describe(admin, "topic", topic, ["retention.ms", "cleanup.policy"])
    out["broker_configs"] = describe(admin, "broker", "1", ["num.partitions",
                                                          "transaction.state.log.num.partitions"])
    out["unknown_topic_configs"] = describe(admin, "topic", "no-such-topic", [])
    out["grow_validate_only"] = grow(admin, topic, 9, validate_only=True)
    out["grow"] = grow(admin, topic, 5)
    out["grow_same"] = grow(admin, topic, 5)
    out["grow_unknown"] = grow(admin, "no-such-topic", 2)
    out["grow_bad_node"] = grow(admin, topic, 6, [[7, 1, 2]])
    out["grow_assigned"] = grow(admin, topic, 6, [[3, 1, 2]])
    described = admin.list_topics(topic, timeout=30).topics[topic].partitions
    out["partitions"] = {str(p): described[p].replicas for p in sorted(described)}

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    errors = []

    def delivered(err, msg):
        if err is not None:
            errors.append(str(err))

    for i in range(30):
        producer.produce(topic, key="k%d" % i, value="v%d" % i, partition=i % 6,
                         on_delivery=delivered)
    out["unflushed"] = producer.flush(30)
    out["delivery_errors"] = errors

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(6)])
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
