#!/usr/bin/env python3
"""The Kafka consumer killed under load, on PostgreSQL; one JSON summary, exit 1 on any violation.

  target/clients-venv/bin/python scripts/kafka-chaos.py BINARY [COUNT]

COUNT (10,000) distinct interchanges, and every tenth of them a second time, are produced with
kafka-python to a topic of 6 partitions at a steady pace, while two members of one consumer group
read them and one of the two, at random, is killed with SIGKILL every 2-4 s and started again under
its static member name (each kill lands between some transaction's COMMIT and its offset commit). Once
production ends and the last member has drained the topic: exactly COUNT interchanges and invoices
exist, no control number twice, nothing is dead-lettered, every offset is committed, and every
reading the audit holds beyond the first of each interchange is a replay. Needs tansu at 127.0.0.1:9092 (scripts/brokers-up)
and EDI_INBOX_TEST_POSTGRES (a fresh database is created and dropped)."""

import json
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from chaos import SAMPLE, Database, fail  # noqa: E402

BROKER = "127.0.0.1:9092"
PARTITIONS = 6
# Messages produced a second: 11,000 take some 35 s, which span seven kills or so.
RATE = 300
# Consumer processes in the group, how long the group waits for a killed one, and the seconds
# between kills: longer than the session, so that each kill's rebalance ends before the next
# (tansu 0.6 leaves a group stuck when members die faster than it evicts them).
MEMBERS = int(os.environ.get("EDI_INBOX_CHAOS_MEMBERS", "2"))
SESSION_MS = 3000
KILL_EVERY = (4, 6)


class Member:
    """One `edi-inbox consume` process of the group, restartable."""

    def __init__(self, binary, database_url, source, log):
        self.command = [binary, "--database-url", database_url, "consume", "--consume-auth", "open",
                        "--from", source, "--retry-backoff-ms", "200"]
        self.log, self.process = log, None

    def start(self):
        env = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="warn,edi_inbox::consumer=info,edi_inbox::consumer::kafka=debug")
        self.process = subprocess.Popen(self.command, stdout=subprocess.DEVNULL, stderr=self.log, env=env)

    def kill(self):
        self.process.kill()
        self.process.wait()


def query(database, sql):
    out = subprocess.run(["psql", "-X", "-q", "-At", database.url, "-c", sql], check=True, capture_output=True)
    return int(out.stdout.decode().strip())


def committed(group, topic):
    consumer = KafkaConsumer(bootstrap_servers=BROKER, group_id=group, enable_auto_commit=False)
    offsets = [consumer.committed(TopicPartition(topic, p)) or 0 for p in range(PARTITIONS)]
    consumer.close(autocommit=False)
    return sum(offsets)


def dead_letters(topic):
    consumer = KafkaConsumer(bootstrap_servers=BROKER, auto_offset_reset="earliest", consumer_timeout_ms=2000)
    consumer.assign([TopicPartition(f"{topic}.dead", p) for p in consumer.partitions_for_topic(f"{topic}.dead") or []])
    letters = sum(1 for _ in consumer)
    consumer.close()
    return letters


def trace_missing(database, placed, log_path):
    """Prints, for the first interchanges missing from the inbox, where they were produced and what
    the consumers logged of those offsets (taken, settled: the members log them at debug)."""
    out = subprocess.run(["psql", "-X", "-q", "-At", database.url, "-c", "SELECT control_number FROM inbox"],
                         check=True, capture_output=True)
    present = {int(line) for line in out.stdout.decode().split()}
    missing = sorted(set(placed) - present)
    print(f"kafka-chaos: {len(missing)} interchanges missing, the first: {missing[:20]}", file=sys.stderr)
    lines = pathlib.Path(log_path).read_text(errors="replace").splitlines()
    for n in missing[:20]:
        for partition, offset in placed[n]:
            at = re.compile(f'"partition":{partition}[,}}].*"offset":{offset}[,}}]')
            seen = [line for line in lines if at.search(line)]
            print(f"  {n:09} at partition {partition} offset {offset}: {len(seen)} log lines", file=sys.stderr)
            for line in seen[:6]:
                print(f"    {line}", file=sys.stderr)


def main(binary, count="10000"):
    count = int(count)
    work = tempfile.mkdtemp(prefix="edi_inbox_kafka_chaos_")
    database = Database("postgres", work)
    subprocess.run([binary, "--database-url", database.url, "migrate"], check=True, capture_output=True)
    topic = group = f"edi-chaos-{os.getpid()}-{int(time.time())}"
    admin = KafkaAdminClient(bootstrap_servers=BROKER)
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    admin.close()
    source = f"kafka://{BROKER}/{topic}?group={group}&session_timeout_ms={SESSION_MS}"
    # Every tenth interchange twice, the second time a little later.
    order = [n for n in range(1, count + 1) for _ in range(2 if n % 10 == 0 else 1)]
    produced = len(order)
    with open(f"{work}/consumers.log", "ab") as log:
        members = [Member(binary, database.url, source, log) for _ in range(MEMBERS)]
        for member in members:
            member.start()
        kills, done = [0], threading.Event()

        def killer():
            while not done.wait(random.uniform(*KILL_EVERY)):
                member = random.choice(members)
                member.kill()
                kills[0] += 1
                member.start()

        started = time.monotonic()
        chaos = threading.Thread(target=killer)
        chaos.start()
        producer = KafkaProducer(bootstrap_servers=BROKER, acks="all", linger_ms=5)
        headers = [("content-type", b"application/edi-x12")]
        sends = {}
        for sent, n in enumerate(order):
            # Each interchange its own invoice (the same invoice again would be a duplicate).
            body = SAMPLE.replace("000001142", f"{n:09}").replace("INV-1042", f"INV-{n}").encode()
            sends.setdefault(n, []).append(producer.send(topic, body, key=str(n).encode(), headers=headers))
            if sent % 100 == 99:
                producer.flush()
                time.sleep(max(0.0, started + (sent + 1) / RATE - time.monotonic()))
        producer.flush()
        producer.close()
        done.set()
        chaos.join()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and committed(group, topic) < produced:
            time.sleep(1)
        elapsed = time.monotonic() - started
        for member in members:
            member.kill()
    # Where each interchange was written (partition, offset), to trace one that went missing.
    placed = {n: [(f.value.partition, f.value.offset) for f in futures] for n, futures in sends.items()}
    interchanges = query(database, "SELECT COUNT(*) FROM inbox")
    if interchanges != count:
        trace_missing(database, placed, f"{work}/consumers.log")
    distinct = query(database, "SELECT COUNT(DISTINCT message_id) FROM inbox")
    invoices = query(database, "SELECT COUNT(*) FROM invoices")
    audited = query(database, "SELECT COUNT(*) FROM deliveries WHERE door = 'kafka'")
    replays = query(database, "SELECT COUNT(*) FROM deliveries WHERE door = 'kafka' AND outcome = 'replayed'")
    offsets, letters = committed(group, topic), dead_letters(topic)
    database.drop()
    summary = {"run": "kafka-crash", "backend": "postgres", "interchanges": count, "messages": produced,
               "kills": kills[0], "booked": interchanges, "invoices": invoices, "committed": offsets,
               "audited": audited, "replays": replays, "read_again": audited - produced, "dead_letters": letters,
               "seconds": round(elapsed, 1)}
    print(json.dumps(summary))
    if (interchanges, distinct, invoices) != (count, count, count):
        fail(f"{interchanges} interchanges ({distinct} distinct), {invoices} invoices for {count}")
    if offsets != produced:
        fail(f"{offsets} of {produced} offsets committed")
    if letters:
        fail(f"{letters} dead letters")
    # One first delivery per interchange; every other reading audited (a replay's audit row is
    # written after its answer, so a kill can lose one) is a replay.
    if replays != audited - count:
        fail(f"{audited} readings audited for {count} interchanges, {replays} of them replays")
    if kills[0] < 5:
        fail(f"the consumers were killed {kills[0]} times: the run proves too little")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        fail(__doc__)
    main(*sys.argv[1:])
