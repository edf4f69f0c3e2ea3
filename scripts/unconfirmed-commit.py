#!/usr/bin/env python3
"""A commit whose wait for the synchronous standby is cancelled is not acknowledged.

PostgreSQL keeps such a commit on the primary and returns success with a WARNING ("canceling wait
for synchronous replication due to user request"): acknowledged, it is lost by a failover. One
cluster (Debian's binaries, the helpers of scripts/failover.py) whose synchronous_standby_names
names a standby that never connects, so every commit waits; edi-inbox (release) on it. A delivery
is posted, its backend found waiting (wait event SyncRep) and cancelled with pg_cancel_backend.

Checked: the answer is 503 (never a 2xx), the delivery's audit says `unconfirmed` 503; once the
standby requirement is lifted, a resend is answered as the database holds it: 200, the same id.
And a second instance started with --require-synchronous-standby on this primary is not ready,
naming the standby that does not stream.
Usage: scripts/unconfirmed-commit.py BINARY
"""

import json
import os
import pathlib
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import failover  # noqa: E402
from failover import Senders, free_ports, psql, urlopen  # noqa: E402
from importlib import import_module  # noqa: E402

split_brain = import_module("split-brain")
PORT = str(free_ports(1)[0])
CONTROL = 730_000_001


def main():
    binary = sys.argv[1]
    work = pathlib.Path(tempfile.mkdtemp(prefix="edi-inbox-unconfirmed-"))
    shutil.chown(work, "postgres", "postgres") if os.geteuid() == 0 else None
    data = work / "primary"
    server = None
    passed = False
    failures = []
    try:
        data = split_brain.cluster(work, "primary", PORT)
        server, address = split_brain.serve(binary, work, [PORT], "edi-inbox.log")
        if not address:
            raise SystemExit("edi-inbox did not start")
        # From now on every commit waits for a standby that never comes.
        psql(PORT, "ALTER SYSTEM SET synchronous_standby_names = 'never_connects'")
        psql(PORT, "SELECT pg_reload_conf()")
        time.sleep(0.5)
        # What --require-synchronous-standby makes of this primary: it starts (the settings are
        # right), but is not ready while no synchronous standby streams, and says so.
        checker, checked = split_brain.serve(binary, work, [PORT], "edi-inbox-requiring.log",
                                             "--require-synchronous-standby")
        not_ready = json.loads(urlopen(checked, "/readyz")) if checked else {}
        checker.terminate()
        checker.wait(timeout=30)
        if "never_connects" not in not_ready.get("detail", ""):
            failures.append(f"--require-synchronous-standby is ready without a synchronous standby: {not_ready}")

        sender = Senders(address)
        answer = {}
        posting = threading.Thread(target=lambda: answer.update(zip(("status", "body"), sender.post(CONTROL))))
        posting.start()
        waiting = ""
        for _ in range(100):
            waiting = psql(PORT, "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' "
                                 "AND query LIKE '%inbox%'")
            if waiting:
                break
            time.sleep(0.1)
        if not waiting:
            raise SystemExit("the delivery's commit never waited for the synchronous standby")
        for pid in waiting.split():
            psql(PORT, f"SELECT pg_cancel_backend({pid})")
        posting.join(timeout=60)

        psql(PORT, "ALTER SYSTEM RESET synchronous_standby_names")
        psql(PORT, "SELECT pg_reload_conf()")
        stored = psql(PORT, f"SELECT id FROM inbox WHERE message_id = '{CONTROL:09}'", "edi_inbox")
        audited = ""
        for _ in range(50):
            audited = psql(PORT, "SELECT d.outcome || ' ' || d.status FROM deliveries d JOIN inbox i ON i.id = d.inbox_id "
                                 f"WHERE i.message_id = '{CONTROL:09}' ORDER BY d.received_at, d.outcome", "edi_inbox")
            if "unconfirmed" in audited:
                break
            time.sleep(0.2)
        resent_status, resent = sender.post(CONTROL)
        report = {
            "answer": answer.get("status"),
            "stored_on_the_primary": bool(stored),
            "audit": audited.splitlines(),
            "resend": resent_status,
            "resend_id_is_the_stored_one": resent.get("id") == stored,
            "requiring_a_synchronous_standby": not_ready.get("detail"),
        }
        print(json.dumps(report))
        if answer.get("status") != 503:
            failures.append(f"a commit the standby did not confirm was answered {answer.get('status')}, not 503")
        if "unconfirmed 503" not in audited:
            failures.append("the audit does not say the commit was unconfirmed")
        if (resent_status, resent.get("id")) != (200, stored):
            failures.append(f"the resend got {resent_status} {resent.get('id')}, not a 200 replay of {stored}")
        if failures:
            print("unconfirmed commit: FAILED: " + "; ".join(failures) + f" (logs in {work})", file=sys.stderr)
            return 1
        print("unconfirmed commit: answered 503 and audited; the resend replays what the primary holds")
        passed = True
        return 0
    finally:
        failover.clean_up([server], [data], work, passed)


if __name__ == "__main__":
    sys.exit(main())
