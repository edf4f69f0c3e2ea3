"""The Kafka peer of the tests: kafka-python (an implementation of the protocol independent of the
librdkafka the consumer uses) creates topics, produces interchanges and reads back dead letters and
a group's committed offsets, printing JSON for tests/kafka.rs and scripts/kafka-chaos.py.

  kafka_peer.py create BROKER TOPIC PARTITIONS
  kafka_peer.py produce BROKER TOPIC [--partition N] [--content-type T] [--header NAME=VALUE]... FILE|DIR...
  kafka_peer.py read BROKER TOPIC            (every message from the start: key, headers as a map and
                                              in order, body length)
  kafka_peer.py committed BROKER GROUP TOPIC (partition -> committed offset, -1 when none)
"""

import argparse
import json
import os
import sys

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic


def create(args):
    admin = KafkaAdminClient(bootstrap_servers=args.broker)
    admin.create_topics([NewTopic(args.topic, args.partitions, 1)])
    admin.close()


def bodies(paths):
    for path in paths:
        if os.path.isdir(path):
            for name in sorted(os.listdir(path)):
                yield name, open(os.path.join(path, name), "rb").read()
        else:
            yield os.path.basename(path), open(path, "rb").read()


def produce(args):
    producer = KafkaProducer(bootstrap_servers=args.broker, acks="all", max_request_size=16 << 20)
    headers = [("content-type", args.content_type.encode())] if args.content_type else []
    headers += [tuple(header.split("=", 1)) for header in args.header]
    headers = [(name, value.encode() if isinstance(value, str) else value) for name, value in headers]
    sent = [
        producer.send(args.topic, body, key=name.encode(), partition=args.partition, headers=headers)
        for name, body in bodies(args.files)
    ]
    for future in sent:
        record = future.get(timeout=30)
        print(json.dumps({"partition": record.partition, "offset": record.offset}))
    producer.close()


def read(args):
    consumer = KafkaConsumer(bootstrap_servers=args.broker, auto_offset_reset="earliest", consumer_timeout_ms=2000)
    partitions = consumer.partitions_for_topic(args.topic) or set()
    consumer.assign([TopicPartition(args.topic, p) for p in sorted(partitions)])
    for message in consumer:
        print(json.dumps({
            "partition": message.partition,
            "offset": message.offset,
            "key": message.key.decode() if message.key is not None else None,
            "headers": {key: value.decode() for key, value in message.headers},
            "header_list": [[key, value.decode()] for key, value in message.headers],
            "bytes": len(message.value) if message.value is not None else None,
        }))
    consumer.close()


def committed(args):
    consumer = KafkaConsumer(bootstrap_servers=args.broker, group_id=args.group, enable_auto_commit=False)
    partitions = consumer.partitions_for_topic(args.topic) or set()
    offsets = {p: consumer.committed(TopicPartition(args.topic, p)) for p in sorted(partitions)}
    print(json.dumps({str(p): (-1 if o is None else o) for p, o in offsets.items()}))
    consumer.close(autocommit=False)


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("create")
    command.add_argument("broker")
    command.add_argument("topic")
    command.add_argument("partitions", type=int)
    command.set_defaults(run=create)
    command = commands.add_parser("produce")
    command.add_argument("broker")
    command.add_argument("topic")
    command.add_argument("--partition", type=int)
    command.add_argument("--content-type", default="application/edi-x12")
    command.add_argument("--header", action="append", default=[])
    command.add_argument("files", nargs="+")
    command.set_defaults(run=produce)
    command = commands.add_parser("read")
    command.add_argument("broker")
    command.add_argument("topic")
    command.set_defaults(run=read)
    command = commands.add_parser("committed")
    command.add_argument("broker")
    command.add_argument("group")
    command.add_argument("topic")
    command.set_defaults(run=committed)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
