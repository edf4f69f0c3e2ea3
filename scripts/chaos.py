#!/usr/bin/env python3
"""What production does to a server, done to the release binary under load; one JSON summary per
run, exit 1 on any violation.

crash BINARY postgres|sqlite [COUNT]
    16 workers post COUNT (2,000) distinct interchanges (about 100 a second), retrying every
    failure, while the server is killed with SIGKILL every ~2 s and started again on the same
    port. Afterwards exactly COUNT interchanges and invoices exist, none twice, and the invoice of
    every 2xx answer exists.
outage BINARY
    8 workers post distinct interchanges while PostgreSQL becomes unreachable twice: a cut of the
    TCP relay between server and database (3 s), then a real `pg_ctlcluster restart`. Every answer
    is 2xx or 503 with Retry-After, the invoice of every 2xx answer exists, nothing is stored twice,
    and 2xx resumes by itself; the summary has each recovery time (end of the outage to the first
    2xx).

PostgreSQL runs use EDI_INBOX_TEST_POSTGRES; a fresh database is created and dropped."""

import asyncio
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

ROOT = pathlib.Path(__file__).resolve().parent.parent
SAMPLE = (ROOT / "tests/fixtures/x12/810-single.edi").read_text()
ADMIN = os.environ.get("EDI_INBOX_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/postgres")
# Seconds a worker waits after each answered interchange (about 100 a second from 16 workers), so
# that a crash run spans some ten kills instead of finishing before the first.
PACE = 0.15


def fail(message):
    print(f"chaos: {message}", file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(url, body=None, timeout=15):
    """(status, headers, body); (None, {}, b"") when no answer came."""
    headers = {"content-type": "application/edi-x12"} if body is not None else {}
    req = urllib.request.Request(url, data=body, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()
    except OSError:
        return None, {}, b""


class Database:
    """A fresh PostgreSQL database (dropped at the end) or SQLite file."""

    def __init__(self, backend, work):
        self.backend, self.name = backend, f"edi_inbox_chaos_{uuid.uuid4().hex}"
        if backend == "postgres":
            psql(f"CREATE DATABASE {self.name}")
            self.url = ADMIN.rsplit("/", 1)[0] + "/" + self.name
        else:
            self.url = f"sqlite://{work}/inbox.db"

    def drop(self):
        if self.backend == "postgres":
            psql(f"DROP DATABASE {self.name} WITH (FORCE)")


def psql(sql):
    subprocess.run(["psql", "-X", "-q", ADMIN, "-c", sql], check=True)


class Server:
    def __init__(self, binary, database_url, log, *extra):
        self.port = free_port()
        self.command = [binary, "--database-url", database_url, "--bind", f"127.0.0.1:{self.port}", "--auth", "open",
                        *extra]
        self.log, self.process = log, None

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self):
        env = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="warn")
        self.process = subprocess.Popen(self.command + ["serve"], stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if request(self.url("/readyz"), timeout=1)[0] == 200:
                return
            time.sleep(0.02)
        fail("the server did not become ready")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


class Load:
    """Workers posting distinct interchanges, each retried until it gets a 2xx; every answer kept."""

    def __init__(self, server, workers, count=None, pace=0.0):
        self.server, self.count, self.pace = server, count, pace
        self.lock, self.stop = threading.Lock(), threading.Event()
        self.next, self.answered, self.answers = 0, {}, []  # answers: (time, status, retry-after)
        self.threads = [threading.Thread(target=self.work) for _ in range(workers)]

    def start(self):
        for thread in self.threads:
            thread.start()
        return self

    def join(self):
        self.stop.set() if self.count is None else None
        for thread in self.threads:
            thread.join()

    def take(self):
        with self.lock:
            if self.stop.is_set() or (self.count is not None and self.next >= self.count):
                return None
            self.next += 1
            return self.next

    def work(self):
        while (n := self.take()) is not None:
            body = SAMPLE.replace("000001142", f"{n:09}").encode()
            while True:
                status, headers, text = request(self.server.url("/v1/interchanges"), body)
                with self.lock:
                    self.answers.append((time.monotonic(), status, headers.get("Retry-After")))
                if status in (200, 201):
                    with self.lock:
                        self.answered[n] = (status, json.loads(text)["invoices"][0]["id"])
                    time.sleep(self.pace)
                    break
                time.sleep(0.05)

    def failed(self):
        return sum(1 for _, status, _ in self.answers if status not in (200, 201))


def listing(server, path):
    items, cursor = [], None
    while True:
        status, _, text = request(server.url(f"{path}?limit=500" + (f"&cursor={cursor}" if cursor else "")))
        if status != 200:
            fail(f"{path} answered {status}")
        page = json.loads(text)
        items.extend(page["items"])
        if not (cursor := page["next_cursor"]):
            return items


def verify(server, load):
    """Every answered interchange stored once with its invoice, nothing else stored."""
    interchanges, invoices = listing(server, "/v1/interchanges"), listing(server, "/v1/invoices")
    controls = {i["control_number"] for i in interchanges}
    expected = len(load.answered)
    if len(interchanges) != expected or len(controls) != expected:
        fail(f"{len(interchanges)} interchanges ({len(controls)} distinct), {expected} answered")
    stored = {i["id"] for i in invoices}
    if len(invoices) != expected or len(stored) != expected:
        fail(f"{len(invoices)} invoices for {expected} answered interchanges")
    lost = [n for n, (_, invoice) in load.answered.items() if invoice not in stored]
    if lost:
        fail(f"2xx answers whose invoice does not exist: {lost[:5]}")


def crash(binary, backend, count="2000"):
    count = int(count)
    work = tempfile.mkdtemp(prefix="edi_inbox_chaos_")
    database = Database(backend, work)
    with open(f"{work}/server.log", "ab") as log:
        server = Server(binary, database.url, log)
        server.start()
        kills, done = [0], threading.Event()

        def killer():
            while not done.wait(random.uniform(1.5, 2.5)):
                server.kill()
                kills[0] += 1
                server.start()

        started = time.monotonic()
        chaos = threading.Thread(target=killer)
        chaos.start()
        load = Load(server, 16, count, PACE).start()
        load.join()
        done.set()
        chaos.join()
        elapsed = time.monotonic() - started
        if len(load.answered) != count:
            fail(f"{len(load.answered)} of {count} answered")
        verify(server, load)
        server.kill()
    database.drop()
    if kills[0] < 3:
        fail(f"the server was killed {kills[0]} times: the run proves too little")
    replays = sum(1 for status, _ in load.answered.values() if status == 200)
    print(json.dumps({"run": "crash", "backend": backend, "interchanges": count, "kills": kills[0],
                      "failed_attempts": load.failed(), "answered_as_replay": replays,
                      "seconds": round(elapsed, 1)}))


class Relay:
    """A TCP relay between the server and PostgreSQL that can be cut (every connection closed, new
    ones refused) and restored."""

    def __init__(self, upstream_port):
        self.upstream, self.port = upstream_port, free_port()
        self.loop = asyncio.new_event_loop()
        self.connections, self.listener = set(), None
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.restore()

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def pipe(self, reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def accept(self, client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            client_writer.close()
            return
        self.connections.update((client_writer, server_writer))
        await asyncio.gather(self.pipe(client_reader, server_writer), self.pipe(server_reader, client_writer))

    def restore(self):
        async def listen():
            self.listener = await asyncio.start_server(self.accept, "127.0.0.1", self.port)
        self.run(listen())

    def cut(self):
        async def close():
            self.listener.close()
            for writer in list(self.connections):
                writer.transport.abort()
            self.connections.clear()
        self.run(close())


def outage(binary):
    work = tempfile.mkdtemp(prefix="edi_inbox_chaos_")
    database = Database("postgres", work)
    upstream = int(ADMIN.rsplit(":", 1)[1].split("/")[0]) if ADMIN.count(":") >= 2 else 5432
    relay = Relay(upstream)
    relayed = database.url.replace(f":{upstream}/", f":{relay.port}/")
    if relayed == database.url:
        fail(f"cannot route {database.url} through the relay")
    recoveries = {}
    with open(f"{work}/server.log", "ab") as log:
        server = Server(binary, relayed, log, "--db-timeout", "2")
        server.start()
        load = Load(server, 8).start()

        def first_success_after(moment):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with load.lock:
                    for at, status, _ in load.answers:
                        if at >= moment and status in (200, 201):
                            return round(at - moment, 2)
                time.sleep(0.05)
            fail("2xx did not resume within 60 s")

        time.sleep(2)
        relay.cut()
        time.sleep(3)
        restored = time.monotonic()
        relay.restore()
        recoveries["relay_cut_3s"] = first_success_after(restored)
        time.sleep(2)
        version = sorted(os.listdir("/etc/postgresql"))[-1] if os.path.isdir("/etc/postgresql") else None
        if version and subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
                                      capture_output=True).returncode == 0:
            recoveries["pg_ctlcluster_restart"] = first_success_after(time.monotonic())
        else:
            print("chaos: pg_ctlcluster is not available here; only the relay cut was run", file=sys.stderr)
        time.sleep(2)
        load.join()
        bad = [(status, retry) for _, status, retry in load.answers
               if status not in (200, 201) and (status != 503 or not retry)]
        if bad:
            fail(f"answers other than 2xx or 503 with Retry-After: {bad[:5]}")
        verify(server, load)
        server.kill()
    relay.cut()
    database.drop()
    unavailable = sum(1 for _, status, _ in load.answers if status == 503)
    print(json.dumps({"run": "outage", "backend": "postgres", "answered": len(load.answered),
                      "unavailable_503": unavailable, "no_answer": sum(1 for _, s, _ in load.answers if s is None),
                      "recovery_seconds": recoveries}))


if __name__ == "__main__":
    runs = {"crash": crash, "outage": outage}
    if len(sys.argv) < 3 or sys.argv[1] not in runs:
        fail(__doc__)
    runs[sys.argv[1]](*sys.argv[2:])
