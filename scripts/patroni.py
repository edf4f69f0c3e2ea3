#!/usr/bin/env python3
"""Failover under a real HA manager: Patroni with etcd, reached by a multi-host URL and through HAProxy.

An etcd member and two PostgreSQL nodes managed by Patroni (Debian's packages `etcd-server`,
`patroni` and `haproxy`, installed when missing; PostgreSQL run as the postgres user), in
synchronous mode, strict: a commit returns only once the synchronous standby has it, and waits while
there is none. Two edi-inbox replicas (release) under load from eight senders each, retrying until
a 2xx: replica A on the multi-host URL (`target_session_attrs=read-write`) with
--require-synchronous-standby, replica B through HAProxy, whose health check asks each node's
Patroni REST API `GET /primary` (200 on the leader only), as production clusters are wired. Then:

1. **Losing the leader's node**: its Patroni and its postmaster killed with `kill -9` under load.
   Patroni promotes the synchronous standby once the leader key expires. The old node's Patroni is
   started again: it rewinds its data directory (pg_rewind) and rejoins as the synchronous standby,
   and the new leader's commits, which waited for one, go on; both replicas carry on.
2. **The synchronous standby down** (`kill -9` of its Patroni and postmaster): commits wait, answers
   are 503 after the request timeout, nothing is acknowledged; the standby started again, commits go on.
3. **Fail-back**: a switchover to the first node under load (Patroni's REST API).

Checked on both nodes, every database that ever took writes: every acknowledged interchange is
stored with the id it was answered with (else lost), every interchange has one invoice, both nodes
hold the same interchanges (nothing booked on one only), and a resend of each to either replica is a
200 with that id. Each fault must find interchanges acknowledged before it and in flight at it.
Reports the answers other than 2xx and each replica's longest time without a 2xx at each fault. Usage: scripts/patroni.py BINARY
"""

import concurrent.futures
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import failover  # noqa: E402
from failover import PG_BIN, Senders, free_ports, psql, urlopen  # noqa: E402

PACKAGES = {"patroni": "patroni", "etcd": "etcd-server", "haproxy": "haproxy"}
ETCD_CLIENT, ETCD_PEER, HAPROXY, *NODE_PORTS = free_ports(7)
NODES = {"node1": (NODE_PORTS[0], NODE_PORTS[1]), "node2": (NODE_PORTS[2], NODE_PORTS[3])}  # (postgres, REST)
REQUEST_TIMEOUT = 5


def install_missing():
    """Debian's packages for whatever of Patroni, etcd and HAProxy is not on this machine."""
    missing = [package for command, package in PACKAGES.items() if not shutil.which(command)]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit(f"patroni: install {' '.join(missing)} (apt-get install {' '.join(missing)})")
    print(f"patroni: installing {' '.join(missing)} from Debian's packages", file=sys.stderr)
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), stdout=subprocess.DEVNULL)


def node_config(work, name):
    """Patroni's configuration of `name`: synchronous mode (strict), pg_rewind, a short leader TTL."""
    port, rest = NODES[name]
    return f"""scope: edi-inbox
namespace: /{work.name}/
name: {name}
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd3:
  host: 127.0.0.1:{ETCD_CLIENT}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      parameters:
        synchronous_commit: "on"
        wal_keep_size: 256MB
        max_wal_senders: 5
  initdb:
    - encoding: UTF8
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:{port}
  connect_address: 127.0.0.1:{port}
  data_dir: {work / name}
  bin_dir: {PG_BIN}
  pgpass: {work / (name + '.pgpass')}
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: '{work}'
"""


HAPROXY_CONFIG = """global
  maxconn 2000
defaults
  mode tcp
  timeout connect 2s
  timeout client 30m
  timeout server 30m
  timeout check 1s
listen primary
  bind 127.0.0.1:{listen}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
"""


class Cluster:
    """etcd, the two Patroni nodes and HAProxy, each a process of this script, logged in `work`."""

    def __init__(self, work):
        self.work = work
        self.patronis = {}
        self.others = []

    def spawn(self, name, command, as_postgres_user=False):
        log = open(self.work / f"{name}.log", "a")
        prefix = failover.AS_POSTGRES if as_postgres_user else []
        # In the work directory: Patroni's helper processes change into their parent's directory,
        # which the postgres user cannot enter when the checkout lies in a private one (mktemp -d).
        return subprocess.Popen(prefix + [str(c) for c in command], stdout=log, stderr=subprocess.STDOUT,
                                cwd=self.work)

    def start(self):
        self.others.append(self.spawn("etcd", [
            "etcd", "--name", "etcd1", "--data-dir", self.work / "etcd",
            "--listen-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
            "--advertise-client-urls", f"http://127.0.0.1:{ETCD_CLIENT}",
            "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-cluster", f"etcd1=http://127.0.0.1:{ETCD_PEER}"]))
        for name in NODES:
            (self.work / f"{name}.yml").write_text(node_config(self.work, name))
            shutil.chown(self.work / f"{name}.yml", "postgres", "postgres") if os.geteuid() == 0 else None
        self.start_node("node1")
        wait_until(lambda: self.leader() == "node1", 60, "node1 did not bootstrap the cluster")
        self.start_node("node2")
        wait_until(lambda: self.synchronous_standby() == "node2", 90, "node2 did not become the synchronous standby")
        servers = "\n".join(f"  server {name} 127.0.0.1:{port} maxconn 500 check port {rest}"
                            for name, (port, rest) in NODES.items())
        (self.work / "haproxy.cfg").write_text(HAPROXY_CONFIG.format(listen=HAPROXY, servers=servers))
        self.others.append(self.spawn("haproxy", ["haproxy", "-db", "-f", self.work / "haproxy.cfg"]))

    def start_node(self, name):
        self.patronis[name] = self.spawn(name, ["patroni", self.work / f"{name}.yml"], as_postgres_user=True)

    def lose_node(self, name):
        """The node gone at once: `kill -9` of its Patroni, then of its postmaster (its backends live on
        until they notice)."""
        patroni = self.patronis.pop(name)
        patroni.kill()
        patroni.wait()
        # runuser's child: the Patroni daemon itself.
        subprocess.run(["pkill", "-9", "-f", f"patroni {self.work / name}.yml"], capture_output=True)
        pid_file = self.work / name / "postmaster.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)

    def members(self):
        """Patroni's view of the cluster, asked of any node that answers: {name: member}."""
        for _, rest in NODES.values():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{rest}/cluster", timeout=2) as answer:
                    return {member["name"]: member for member in json.load(answer)["members"]}
            except (OSError, ValueError, urllib.error.URLError):
                continue
        return {}

    def leader(self):
        return next((name for name, member in self.members().items()
                     if member["role"] == "leader" and member.get("state") == "running"), None)

    def synchronous_standby(self):
        return next((name for name, member in self.members().items()
                     if member["role"] == "sync_standby" and member.get("state") in ("running", "streaming")), None)

    def switchover(self, leader, candidate):
        rest = NODES[leader][1]
        request = urllib.request.Request(f"http://127.0.0.1:{rest}/switchover", method="POST",
                                         data=json.dumps({"leader": leader, "candidate": candidate}).encode())
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()

    def stop(self):
        for name in list(self.patronis):
            self.lose_node(name)
        for process in self.others:
            process.kill()
            process.wait()


def wait_until(condition, seconds, failure):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(0.2)
    raise SystemExit(f"patroni: {failure}")


class Load:
    """Both replicas' senders, started together; their acknowledgements, refusals and in-flight counted as one."""

    def __init__(self, addresses):
        self.senders = [Senders(address, 740_000_000 + 10_000_000 * index) for index, address in enumerate(addresses)]
        for senders in self.senders:
            for thread in senders.threads:
                thread.start()

    def acknowledged(self):
        return {control: value for senders in self.senders for control, value in dict(senders.acknowledged).items()}

    def in_flight(self):
        return sum(len(set(senders.in_flight)) for senders in self.senders)

    def refusals(self):
        counts = {}
        for senders in self.senders:
            for status, count in dict(senders.refusals).items():
                counts[str(status)] = counts.get(str(status), 0) + count
        return counts

    def first_after(self, moment):
        """Seconds from `moment` to each replica's first 2xx after it, or None."""
        return [min((at - moment for _, at in dict(senders.acknowledged).values() if at > moment), default=None)
                for senders in self.senders]

    def longest_gaps(self, since):
        """Each replica's longest time without a 2xx from `since` on: what its senders saw of a switch."""
        gaps = []
        for senders in self.senders:
            times = sorted([since] + [at for _, at in dict(senders.acknowledged).values() if at > since])
            gaps.append(round(max(later - earlier for earlier, later in zip(times, times[1:])), 2))
        return gaps

    def stop(self):
        for senders in self.senders:
            senders.stop.set()
        for senders in self.senders:
            for thread in senders.threads:
                thread.join(timeout=150)


def fault(load, name, failures):
    """What a fault finds: acknowledged before it and in flight at it, both required to be > 0."""
    before, in_flight = len(load.acknowledged()), load.in_flight()
    if not before or not in_flight:
        failures.append(f"{name}: {before} acknowledged before it and {in_flight} in flight at it (both must be > 0)")
    return {"acknowledged_before": before, "in_flight_at_it": in_flight}


def check(cluster, load, addresses, failures):
    """Every acknowledged interchange on both nodes with its id, one invoice each, the same set on
    both, and a 200 replay with that id from either replica."""
    acknowledged = load.acknowledged()
    held = {}
    for name, (port, _) in NODES.items():
        held[name] = dict(line.split("|") for line in
                          psql(port, "SELECT message_id, id FROM inbox", "edi_inbox").splitlines())
        wrong = int(psql(port, """SELECT count(*) FROM (SELECT i.id FROM inbox i LEFT JOIN invoices v
            ON v.inbox_id = i.id GROUP BY i.id HAVING count(v.id) <> 1) AS wrong""", "edi_inbox"))
        lost = [c for c, (id_, _) in acknowledged.items() if held[name].get(f"{c:09}") != id_]
        if lost:
            failures.append(f"{len(lost)} acknowledged interchanges are not on {name} with their id: {lost[:5]}")
        if wrong:
            failures.append(f"{wrong} interchanges on {name} do not have exactly one invoice")
    if held["node1"] != held["node2"]:
        failures.append(f"the nodes differ: {len(set(held['node1'].items()) ^ set(held['node2'].items()))} interchanges on one only")
    resenders = [Senders(address) for address in addresses]
    items = [(resenders[index % 2], control, id_) for index, (control, (id_, _)) in enumerate(acknowledged.items())]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda item: (item[0].post(item[1]), item[2]), items))
    not_replayed = sum(1 for (status, body), id_ in answers if status != 200 or body.get("id") != id_)
    if not_replayed:
        failures.append(f"{not_replayed} resends were not a 200 with the id first answered")
    return {"acknowledged": len(acknowledged), "held_by_each_node": {n: len(h) for n, h in held.items()},
            "resends_not_replayed": not_replayed}


def main():
    binary = sys.argv[1]
    install_missing()
    work = pathlib.Path(tempfile.mkdtemp(prefix="edi-inbox-patroni-"))
    shutil.chown(work, "postgres", "postgres") if os.geteuid() == 0 else None
    cluster = Cluster(work)
    servers = []
    failures = []
    report = {}
    passed = False
    try:
        cluster.start()
        psql(NODES["node1"][0], "CREATE DATABASE edi_inbox")
        hosts = ",".join(f"127.0.0.1:{port}" for port, _ in NODES.values())
        flags = ("--request-timeout", str(REQUEST_TIMEOUT))
        replica_a, address_a = failover.serve(
            binary, f"postgres://postgres@{hosts}/edi_inbox?target_session_attrs=read-write",
            work / "edi-inbox-a.log", "--require-synchronous-standby", *flags)
        replica_b, address_b = failover.serve(binary, f"postgres://postgres@127.0.0.1:{HAPROXY}/edi_inbox",
                                              work / "edi-inbox-b.log", *flags)
        servers += [replica_a, replica_b]
        if not (address_a and address_b):
            raise SystemExit("patroni: an edi-inbox replica did not start")
        addresses = [address_a, address_b]
        load = Load(addresses)
        time.sleep(3)

        # 1. The leader's node lost under load; the synchronous standby promoted; the old node rewound.
        report["leader_lost"] = fault(load, "losing the leader", failures)
        cluster.lose_node("node1")
        lost_at = time.monotonic()
        promoted_at = wait_until(lambda: cluster.leader() == "node2", 60, "node2 was not promoted")
        # Strict synchronous mode: the new leader's commits wait until a standby has them, so the
        # old node is started again at once, as an operator or its supervisor would.
        cluster.start_node("node1")
        rejoined_at = wait_until(lambda: cluster.synchronous_standby() == "node1", 90,
                                 "the old leader did not rejoin as the synchronous standby")
        wait_until(lambda: all(load.first_after(promoted_at)), 30, "a replica did not carry on on the new leader")
        report["leader_lost"].update({
            "seconds_to_promotion": round(promoted_at - lost_at, 2),
            "seconds_to_rejoin": round(rejoined_at - lost_at, 2),
            "longest_seconds_without_a_2xx_per_replica": load.longest_gaps(lost_at),
        })
        time.sleep(2)

        # 2. The synchronous standby down: commits wait, nothing is acknowledged, then it comes back.
        report["standby_lost"] = fault(load, "losing the synchronous standby", failures)
        cluster.lose_node("node1")
        standby_lost_at = time.monotonic()
        time.sleep(REQUEST_TIMEOUT + 3)
        refusals_before = load.refusals()
        acknowledged_without_standby = sum(1 for _, at in load.acknowledged().values() if at > standby_lost_at + 1)
        cluster.start_node("node1")
        back_at = wait_until(lambda: cluster.synchronous_standby() == "node1", 90, "the standby did not come back")
        report["standby_lost"].update({
            "acknowledged_while_no_standby": acknowledged_without_standby,
            "answers_other_than_2xx_so_far": refusals_before,
            "seconds_without_standby": round(back_at - standby_lost_at, 2),
            "longest_seconds_without_a_2xx_per_replica": load.longest_gaps(standby_lost_at),
        })
        if acknowledged_without_standby:
            failures.append(f"{acknowledged_without_standby} interchanges acknowledged with no synchronous standby")
        if not refusals_before.get("503"):
            failures.append("no 503 while commits waited for the missing standby")
        time.sleep(2)

        # 3. Fail-back: a switchover to the first node under load.
        report["fail_back"] = fault(load, "the fail-back", failures)
        switched_at = time.monotonic()
        cluster.switchover("node2", "node1")
        leader_at = wait_until(lambda: cluster.leader() == "node1", 60, "the switchover back to node1 did not happen")
        wait_until(lambda: all(load.first_after(leader_at)), 30, "a replica did not carry on after the fail-back")
        report["fail_back"]["longest_seconds_without_a_2xx_per_replica"] = load.longest_gaps(switched_at)
        wait_until(lambda: cluster.synchronous_standby() == "node2", 90, "node2 did not rejoin after the fail-back")
        time.sleep(2)
        load.stop()

        report["answers_other_than_2xx"] = load.refusals()
        report["readiness_a"] = json.loads(urlopen(address_a, "/readyz") or "{}")
        report.update(check(cluster, load, addresses, failures))
        print(json.dumps(report, indent=2))
        code = failover.verdict("patroni", failures, work, "under Patroni, through a multi-host URL and HAProxy, "
                                "nothing acknowledged was lost and nothing booked twice")
        passed = code == 0
        return code
    finally:
        cluster.stop()
        failover.clean_up(servers, [], work, passed)


if __name__ == "__main__":
    sys.exit(main())
