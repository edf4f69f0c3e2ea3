#!/usr/bin/env python3
"""Loses the PostgreSQL primary under load and checks that no acknowledged interchange is lost.

Two PostgreSQL clusters on this machine (Debian's binaries, run as the postgres user): a primary
configured with deploy/postgresql-primary.conf and a streaming standby made by pg_basebackup,
`synchronous` (synchronous_standby_names names it, synchronous_commit = on) or `asynchronous`. The edi-inbox binary (release) runs on the multi-host
URL `postgres://…@127.0.0.1:P1,127.0.0.1:P2/edi_inbox?target_session_attrs=read-write` and is never
restarted. Eight senders post distinct interchanges, each retrying until it gets a 2xx, and note the
id of every 2xx. Then the fault: the standby's WAL receiver is paused (SIGSTOP) for 1.5 s while the
load goes on — an asynchronous primary keeps acknowledging what the standby does not have, a
synchronous one cannot — the primary is killed (`pg_ctl stop -m immediate`), the receiver resumed,
and the standby promoted (`pg_ctl promote`). Load continues on the new primary, then stops.

Checked on the new primary: every acknowledged interchange is stored with the id it was answered
with (else lost), has one inbox row and one invoice (else duplicated), and a resend is answered 200
with that id. Reports the time from the primary's loss to the first 2xx on the new one.

The synchronous run must lose nothing; the asynchronous run must show the loss it exists to catch.
Run by .ci/run for both. Usage: scripts/failover.py BINARY synchronous|asynchronous
"""

import collections
import concurrent.futures
import glob
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SAMPLE = (ROOT / "tests" / "fixtures" / "x12" / "810-single.edi").read_bytes()
PG_BIN = pathlib.Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])
SENDERS = 8


AS_POSTGRES = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def free_ports(count):
    """Ports free now, held together while chosen so they differ: a fixed port could be held by anything."""
    probes = [socket.socket() for _ in range(count)]
    for probe in probes:
        probe.bind(("127.0.0.1", 0))
    ports = [probe.getsockname()[1] for probe in probes]
    for probe in probes:
        probe.close()
    return ports


PRIMARY_PORT, STANDBY_PORT = free_ports(2)


def as_postgres(*command, stdin=None):
    return subprocess.run(AS_POSTGRES + [str(c) for c in command], check=True, capture_output=True, text=True, input=stdin)


def start(cluster, log):
    """`pg_ctl start`, its output to `log`: the server it leaves running would hold a captured pipe open."""
    subprocess.run(AS_POSTGRES + [str(PG_BIN / "pg_ctl"), "-D", str(cluster), "-l", str(log), "-w", "start"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def psql(port, sql, database="postgres"):
    return as_postgres(PG_BIN / "psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", port, "-d", database,
                       stdin=sql).stdout.strip()


def interchange(control):
    return SAMPLE.replace(b"000001142", f"{control:09}".encode())


class Senders:
    """Threads posting distinct interchanges, each retried until a 2xx; every 2xx's id and time kept,
    every other answer counted by status (None: no answer), and the control numbers awaiting one."""

    def __init__(self, address, first_control=700_000_000):
        self.host, self.port = address.rsplit(":", 1)
        self.acknowledged = {}  # control number -> (id, time of the 2xx)
        self.refusals = collections.Counter()
        self.in_flight = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.next_control = first_control
        self.threads = [threading.Thread(target=self.send_until_stopped, daemon=True) for _ in range(SENDERS)]

    def post(self, control):
        connection = http.client.HTTPConnection(self.host, int(self.port), timeout=60)
        try:
            connection.request("POST", "/v1/interchanges", body=interchange(control),
                               headers={"content-type": "application/edi-x12"})
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read() or b"{}")
        except (OSError, http.client.HTTPException, ValueError):
            return None, {}
        finally:
            connection.close()

    def send_until_stopped(self):
        while not self.stop.is_set():
            with self.lock:
                control, self.next_control = self.next_control, self.next_control + 1
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                with self.lock:
                    self.in_flight.add(control)
                status, body = self.post(control)
                with self.lock:
                    self.in_flight.discard(control)
                    if status in (200, 201):
                        self.acknowledged[control] = (body["id"], time.monotonic())
                        break
                    self.refusals[status] += 1
                time.sleep(0.05)
            else:
                raise SystemExit(f"interchange {control} got no 2xx in 120 s")


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    if mode not in ("synchronous", "asynchronous"):
        raise SystemExit("mode: synchronous or asynchronous")
    work = pathlib.Path(tempfile.mkdtemp(prefix="edi-inbox-failover-"))
    shutil.chown(work, "postgres", "postgres") if os.geteuid() == 0 else None
    primary, standby = work / "primary", work / "standby"
    server = None
    passed = False
    try:
        as_postgres(PG_BIN / "initdb", "-D", primary, "-A", "trust", "-U", "postgres", "--no-sync")
        with open(primary / "postgresql.conf", "a") as conf:
            conf.write((ROOT / "deploy" / "postgresql-primary.conf").read_text())
            conf.write(f"port = {PRIMARY_PORT}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{work}'\n")
        start(primary, work / "primary.log")
        psql(PRIMARY_PORT, "CREATE DATABASE edi_inbox")
        as_postgres(PG_BIN / "pg_basebackup", "-h", "127.0.0.1", "-p", PRIMARY_PORT, "-U", "postgres", "-D", standby,
                    "-X", "stream", "-R", "-c", "fast")
        with open(standby / "postgresql.auto.conf", "a") as conf:
            conf.write(f"primary_conninfo = 'host=127.0.0.1 port={PRIMARY_PORT} user=postgres application_name=standby1'\n")
        with open(standby / "postgresql.conf", "a") as conf:
            conf.write(f"port = {STANDBY_PORT}\n")
        start(standby, work / "standby.log")
        if mode == "synchronous":
            # Only now: with a synchronous standby named, every commit waits for it.
            psql(PRIMARY_PORT, "ALTER SYSTEM SET synchronous_standby_names = 'standby1'")
            psql(PRIMARY_PORT, "SELECT pg_reload_conf()")
        expected = "sync" if mode == "synchronous" else "async"
        for _ in range(100):
            if psql(PRIMARY_PORT, "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'") == expected:
                break
            time.sleep(0.1)
        else:
            raise SystemExit(f"the standby is not streaming as {expected}")

        url = (f"postgres://postgres@127.0.0.1:{PRIMARY_PORT},127.0.0.1:{STANDBY_PORT}/edi_inbox"
               "?target_session_attrs=read-write")
        if mode == "synchronous":
            # The same primary, as --require-synchronous-standby sees it: ready, one standby streaming.
            checker, checked = serve(binary, url, work / "edi-inbox-requiring.log", "--require-synchronous-standby")
            if not checked:
                raise SystemExit("edi-inbox refused to start with --require-synchronous-standby")
            readiness = json.loads(urlopen(checked, "/readyz"))
            checker.terminate()
            checker.wait(timeout=30)
            if (readiness.get("synchronous_standby") or {}).get("streaming") != 1:
                raise SystemExit(f"--require-synchronous-standby does not see the synchronous standby: {readiness}")
        server, address = serve(binary, url, work / "edi-inbox.log")
        if not address:
            raise SystemExit("edi-inbox did not start")

        senders = Senders(address)
        for thread in senders.threads:
            thread.start()
        time.sleep(3)
        receiver = int(psql(STANDBY_PORT, "SELECT pid FROM pg_stat_wal_receiver"))
        os.kill(receiver, signal.SIGSTOP)
        with senders.lock:
            before_the_pause = len(senders.acknowledged)
        time.sleep(1.5)
        with senders.lock:
            in_flight = len(senders.in_flight)
        as_postgres(PG_BIN / "pg_ctl", "-D", primary, "stop", "-m", "immediate")
        lost_primary_at = time.monotonic()
        with senders.lock:
            before = len(senders.acknowledged)
        # Killed while still stopped: what the primary had sent but the receiver not yet read (kernel
        # socket buffers hold megabytes) dies with it. Resumed instead, it would read that WAL after the
        # primary's death, and whether an asynchronous standby lost anything would depend on how much
        # fitted in those buffers. The standby restarts from the WAL it had written, as after a crash.
        os.kill(receiver, signal.SIGKILL)
        for _ in range(600):
            if subprocess.run(AS_POSTGRES + [str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(STANDBY_PORT)]).returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise SystemExit("the standby did not come back after its WAL receiver was killed")
        as_postgres(PG_BIN / "pg_ctl", "-D", standby, "-w", "promote")
        promoted_at = time.monotonic()
        time.sleep(4)
        senders.stop.set()
        for thread in senders.threads:
            thread.join(timeout=150)

        acknowledged = dict(senders.acknowledged)
        after = sorted(at for _, at in acknowledged.values() if at > lost_primary_at)
        first_after = after[0] - lost_primary_at if after else None
        ids = ",".join(f"'{interchange_id}'" for interchange_id, _ in acknowledged.values())
        stored = set(psql(STANDBY_PORT, f"SELECT id FROM inbox WHERE id IN ({ids})", "edi_inbox").split())
        lost = sorted(control for control, (interchange_id, _) in acknowledged.items() if interchange_id not in stored)
        duplicated = psql(STANDBY_PORT, """SELECT count(*) FROM (SELECT i.id FROM inbox i LEFT JOIN invoices v ON v.inbox_id = i.id
            GROUP BY i.id HAVING count(v.id) <> 1) AS wrong""", "edi_inbox")
        keys = psql(STANDBY_PORT, "SELECT count(*) - count(DISTINCT (source, message_id)) FROM inbox", "edi_inbox")
        kept = [(control, interchange_id) for control, (interchange_id, _) in acknowledged.items() if control not in lost]
        with concurrent.futures.ThreadPoolExecutor(SENDERS) as pool:
            answers = list(pool.map(lambda item: senders.post(item[0]), kept))
        replayed_elsewhere = [control for (control, interchange_id), (status, body) in zip(kept, answers)
                              if status != 200 or body.get("id") != interchange_id]
        readiness = json.loads(urlopen(address, "/readyz"))
        failovers = [line for line in urlopen(address, "/metrics").splitlines()
                     if line.startswith("edi_inbox_db_failovers_total")]
        report = {
            "mode": mode,
            "acknowledged": len(acknowledged),
            "acknowledged_before_the_loss": before,
            "acknowledged_while_the_standby_was_paused": before - before_the_pause,
            "in_flight_at_the_loss": in_flight,
            "answers_other_than_2xx": {str(status): count for status, count in senders.refusals.items()},
            "lost": len(lost),
            "duplicated": int(duplicated) + int(keys),
            "resends_not_answered_with_their_id": len(replayed_elsewhere),
            "seconds_from_primary_loss_to_promotion": round(promoted_at - lost_primary_at, 2),
            "seconds_from_primary_loss_to_first_2xx": None if first_after is None else round(first_after, 2),
            "primary_now": readiness.get("primary"),
            "failovers_seen": failovers,
        }
        print(json.dumps(report, indent=2))
        failures = []
        if report["duplicated"] or replayed_elsewhere:
            failures.append("an interchange was booked twice or replayed with another id")
        if readiness.get("primary") != f"127.0.0.1:{STANDBY_PORT}" or first_after is None:
            failures.append("the service did not carry on on the new primary")
        if mode == "synchronous" and lost:
            failures.append(f"{len(lost)} acknowledged interchanges lost with a synchronous standby: {lost[:10]}")
        if before_the_pause == 0 or in_flight == 0:
            failures.append("nothing was acknowledged before the fault, or nothing was in flight at it")
        if mode == "asynchronous" and before == before_the_pause:
            failures.append("nothing was acknowledged while the standby was paused: the asynchronous fault did not happen")
        if mode == "asynchronous" and not lost:
            failures.append("the asynchronous run lost nothing: the fault did not happen as intended")
        if failures:
            print("failover: FAILED: " + "; ".join(failures) + f" (logs in {work})", file=sys.stderr)
            return 1
        print(f"failover ({mode}): " + ("nothing acknowledged was lost" if mode == "synchronous" else
              f"{len(lost)} acknowledged interchanges lost, as an asynchronous standby loses them"))
        passed = True
        return 0
    finally:
        clean_up([server], [primary, standby], work, passed)


def verdict(name, failures, work, success):
    """Prints the failures (and where the logs are) or `success`: the run's exit code."""
    if failures:
        print(f"{name}: FAILED: " + "; ".join(failures) + f" (logs in {work})", file=sys.stderr)
        return 1
    print(f"{name}: {success}")
    return 0


def clean_up(servers, clusters, work, passed):
    """Stops the edi-inbox processes and the clusters; removes `work` when the run passed (only once the
    clusters are stopped: a running one would outlive its deleted directory), else keeps it for its logs."""
    for server in servers:
        if server and server.poll() is None:
            server.terminate()
            server.wait(timeout=30)
    for cluster in clusters:
        if (cluster / "postmaster.pid").exists():
            subprocess.run(AS_POSTGRES + [str(PG_BIN / "pg_ctl"), "-D", str(cluster), "stop", "-m", "immediate"],
                           capture_output=True)
    if passed:
        shutil.rmtree(work, ignore_errors=True)


def serve(binary, url, log_path, *flags):
    """edi-inbox on `url`, open, its log to `log_path`: (process, address), or (process, None) when it exits."""
    log = open(log_path, "w")
    environment = dict(os.environ, DATABASE_URL=url, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="warn,edi_inbox=info")
    server = subprocess.Popen([binary, "--bind", "127.0.0.1:0", "--auth", "open", "--rate-limit", "1000000", *flags,
                               "serve"], stderr=subprocess.PIPE, text=True, env=environment)
    for line in server.stderr:
        log.write(line)
        log.flush()
        try:
            event = json.loads(line)
        except ValueError:  # the error it exits with
            continue
        if event.get("fields", {}).get("message") == "listening":
            threading.Thread(target=lambda: [log.write(line) for line in server.stderr], daemon=True).start()
            return server, event["fields"]["address"]
    server.wait(timeout=30)
    return server, None


def urlopen(address, path):
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("GET", path)
    return connection.getresponse().read().decode()


if __name__ == "__main__":
    sys.exit(main())
