#!/usr/bin/env python3
"""Two writable primaries, as without an HA manager's fencing: nothing is booked in both.

A primary and a streaming standby of one cluster (Debian's binaries, run as the postgres user, the
helpers of scripts/failover.py). edi-inbox (release) runs on the multi-host URL that names the old
primary first. The old primary's postmaster is killed (kill -9), the standby promoted, and the old
primary started again with nothing to fence it: a writable zombie on the older timeline, first in
URL order. Then, under load from eight senders that retry until a 2xx:

1. the service writes to the promoted standby (the higher timeline), although the zombie answers
   first in URL order;
2. the new primary stalls (its postmaster SIGSTOPped 3 s, so no new connection is answered):
   writes wait or get 503, never go to the zombie;
3. edi-inbox is restarted while both are up: it writes to the new primary again;
4. a host of another cluster next to the new primary (both writable, which one is the primary
   cannot be told): edi-inbox refuses to start and names both;
5. the new primary stopped, only the zombie answers: edi-inbox restarted with the --timeline-file
   its earlier runs kept refuses to start, naming the zombie as an old primary (started without
   the file, it would write to the zombie: checked too, so that the check can fail).

Checked: the zombie holds exactly what was booked before the promotion (nothing acknowledged after
it is there), every acknowledged interchange is on the new primary with the id it was answered with,
and a resend of each is a 200 replay. Usage: scripts/split-brain.py BINARY
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import failover  # noqa: E402
from failover import PG_BIN, ROOT, Senders, as_postgres, free_ports, psql, start, urlopen  # noqa: E402

OLD, NEW, OTHER = (str(port) for port in free_ports(3))
COUNT = "SELECT count(*) FROM inbox"


def cluster(work, name, port):
    """A fresh cluster `name` on `port`, configured as deploy/ says, running."""
    data = work / name
    as_postgres(PG_BIN / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
    with open(data / "postgresql.conf", "a") as conf:
        conf.write((ROOT / "deploy" / "postgresql-primary.conf").read_text())
        conf.write(f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{work}'\n")
    start(data, work / f"{name}.log")
    psql(port, "CREATE DATABASE edi_inbox")
    return data


def serve(binary, work, hosts, log_name, *flags, remembering=True):
    """edi-inbox on the multi-host URL of `hosts`, remembering the timeline written to in `work`
    unless told not to: (process, address), or (process, None) when it exits."""
    url = ("postgres://postgres@" + ",".join(f"127.0.0.1:{port}" for port in hosts) +
           "/edi_inbox?target_session_attrs=read-write")
    remembered = ("--timeline-file", str(work / "timeline")) if remembering else ()
    return failover.serve(binary, url, work / log_name, *remembered, *flags)


def primary_of(address):
    return json.loads(urlopen(address, "/readyz") or "{}").get("primary")


def wait_for_primary(address, port, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if primary_of(address) == f"127.0.0.1:{port}":
                return True
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    return False


def main():
    binary = sys.argv[1]
    work = pathlib.Path(tempfile.mkdtemp(prefix="edi-inbox-split-brain-"))
    shutil.chown(work, "postgres", "postgres") if os.geteuid() == 0 else None
    old = work / "old"
    new = work / "new"
    servers = []
    failures = []
    passed = False
    try:
        old = cluster(work, "old", OLD)
        as_postgres(PG_BIN / "pg_basebackup", "-h", "127.0.0.1", "-p", OLD, "-U", "postgres", "-D", new,
                    "-X", "stream", "-R", "-c", "fast")
        with open(new / "postgresql.conf", "a") as conf:
            conf.write(f"port = {NEW}\n")
        start(new, work / "new.log")

        server, address = serve(binary, work, [OLD, NEW], "edi-inbox-1.log")
        servers.append(server)
        if not address:
            raise SystemExit("edi-inbox did not start")
        senders = Senders(address)
        for thread in senders.threads:
            thread.start()
        time.sleep(2)

        # The old primary is lost (kill -9 of its postmaster) once the standby has everything booked,
        # the standby promoted, and the old primary started again with no one to fence it: a
        # writable zombie on the older timeline, first in URL order.
        senders.stop.set()
        for thread in senders.threads:
            thread.join(timeout=150)
        booked_before = int(psql(OLD, COUNT, "edi_inbox"))
        for _ in range(100):
            if int(psql(NEW, COUNT, "edi_inbox")) == booked_before:
                break
            time.sleep(0.1)
        acknowledged_before = dict(senders.acknowledged)
        os.kill(int((old / "postmaster.pid").read_text().split()[0]), signal.SIGKILL)
        as_postgres(PG_BIN / "pg_ctl", "-D", new, "-w", "promote")
        senders = Senders(address)
        senders.next_control = 710_000_000
        for thread in senders.threads:
            thread.start()
        if not wait_for_primary(address, NEW):
            failures.append("edi-inbox did not move to the promoted standby")
        for _ in range(100):  # until the killed postmaster's backends are gone
            try:
                start(old, work / "old-again.log")
                break
            except subprocess.CalledProcessError:
                time.sleep(0.2)
        else:
            raise SystemExit("the old primary did not start again")
        time.sleep(2)

        # The new primary stalls for 3 s: nothing may go to the zombie meanwhile.
        postmaster = int((new / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGSTOP)
        time.sleep(3)
        os.kill(postmaster, signal.SIGCONT)
        time.sleep(2)

        # A restart while both are writable, the zombie first in URL order.
        server.terminate()
        server.wait(timeout=30)
        server, address = serve(binary, work, [OLD, NEW], "edi-inbox-2.log")
        servers.append(server)
        if not address:
            raise SystemExit("edi-inbox did not start again")
        if primary_of(address) != f"127.0.0.1:{NEW}":
            failures.append(f"after a restart edi-inbox writes to {primary_of(address)}, not the promoted standby")
        host, port = address.rsplit(":", 1)
        senders.host, senders.port = host, port
        time.sleep(3)
        senders.stop.set()
        for thread in senders.threads:
            thread.join(timeout=150)
        acknowledged = {**acknowledged_before, **senders.acknowledged}
        acknowledged_after = len(senders.acknowledged)

        # Two writable hosts of different clusters: which is the primary cannot be told.
        cluster(work, "other", OTHER)
        refused, refused_address = serve(binary, work, [OTHER, NEW], "edi-inbox-3.log")
        servers.append(refused)
        refusal = (work / "edi-inbox-3.log").read_text()
        if refused_address or refused.returncode == 0:
            failures.append("edi-inbox started on two writable hosts of different clusters")
        elif f"127.0.0.1:{OTHER}" not in refusal or f"127.0.0.1:{NEW}" not in refusal:
            failures.append("the refusal to start does not name both writable hosts")

        on_zombie = int(psql(OLD, COUNT, "edi_inbox"))
        stored = dict(line.split("|") for line in psql(NEW, "SELECT message_id, id FROM inbox", "edi_inbox").splitlines())
        lost = [c for c, (id_, _) in acknowledged.items() if stored.get(f"{c:09}") != id_]
        replays = [senders.post(c)[0] for c in list(acknowledged)[:200]]

        # Only the zombie answers: a restart remembers the newer timeline and refuses it.
        as_postgres(PG_BIN / "pg_ctl", "-D", new, "-m", "fast", "-w", "stop")
        remembering, remembering_address = serve(binary, work, [OLD, NEW], "edi-inbox-4.log")
        servers.append(remembering)
        if remembering_address:
            failures.append("edi-inbox restarted with its timeline file started on the zombie alone")
        elif f"127.0.0.1:{OLD} is on a timeline older" not in (work / "edi-inbox-4.log").read_text():
            failures.append("the refusal to start on the zombie alone does not name it as an old primary")
        forgetting, forgetting_address = serve(binary, work, [OLD, NEW], "edi-inbox-5.log", remembering=False)
        servers.append(forgetting)
        if not forgetting_address or primary_of(forgetting_address) != f"127.0.0.1:{OLD}":
            failures.append("without its timeline file edi-inbox did not take the zombie: the check above cannot fail")
        report = {
            "acknowledged_before_the_promotion": len(acknowledged_before),
            "acknowledged_after_it": acknowledged_after,
            "booked_on_the_zombie_after_the_promotion": on_zombie - booked_before,
            "acknowledged_missing_on_the_new_primary": len(lost),
            "resends_not_replayed": sum(status != 200 for status in replays),
        }
        print(json.dumps(report))
        if not acknowledged_before or not acknowledged_after:
            failures.append("nothing was acknowledged before or after the promotion: the fault did not happen")
        if on_zombie != booked_before:
            failures.append(f"{on_zombie - booked_before} interchanges were booked on the zombie after the promotion")
        if lost:
            failures.append(f"{len(lost)} acknowledged interchanges are not on the new primary")
        if report["resends_not_replayed"]:
            failures.append("a resend was not a 200 replay")
        code = failover.verdict("split brain", failures, work, "nothing booked on the zombie, nothing acknowledged "
                                "lost, two clusters refused, the zombie alone refused after a restart")
        passed = code == 0
        return code
    finally:
        failover.clean_up(servers, [old, new, work / "other"], work, passed)


if __name__ == "__main__":
    sys.exit(main())
