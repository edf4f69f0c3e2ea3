"""AS2 throughput next to plain HTTP ingest, one run, one server (release build, SQLite, open mode).

For each payload size (X12 810 interchanges from examples/corpus, ~1 KiB and ~1 MiB) it posts the
same number of distinct interchanges twice from CONCURRENCY keep-alive connections: raw
(`application/edi-x12`, answered 201 with JSON), and as pyas2lib builds them for a partner's
gateway — compressed, signed (SHA-256) and encrypted (AES-256-CBC), a signed synchronous MDN asked
(answered 200 with an MDN that must say `processed`). The messages are built before the clock
starts: the client's crypto is not measured. Prints messages per second, MiB of EDI per second and
the server's CPU time per message (from /proc, so a client-bound rate still shows the server's cost),
and the AS2/plain ratios.

Usage: bench/as2.sh [CONCURRENCY]   (default 4)
"""

import concurrent.futures
import http.client
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "clients"))

import oscrypto_openssl3  # noqa: F401,E402  (before pyas2lib)
from as2_client import key_and_certificate  # noqa: E402
from harness import listening_address  # noqa: E402
from pyas2lib import Message, Organization, Partner  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
RELEASE = ROOT / "target" / "release"
SIZES = [("1 KiB", 1024, 2000), ("1 MiB", 1024 * 1024, 60)]


def interchanges(size, count, first):
    corpus = RELEASE / "examples" / "corpus"
    return [subprocess.run([str(corpus), str(size), str(first + n)], check=True, capture_output=True).stdout
            for n in range(count)]


def cpu_seconds(pid):
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drive(address, requests, concurrency, accept):
    """Posts every (headers, body) from `concurrency` keep-alive connections; returns seconds."""
    host, port = address.rsplit(":", 1)
    pending = iter(requests)
    lock = threading.Lock()

    def worker():
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        while True:
            with lock:
                item = next(pending, None)
            if item is None:
                return
            headers, body = item
            connection.request("POST", "/v1/interchanges", body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
            if not accept(answer.status, content):
                raise SystemExit(f"unexpected answer {answer.status}: {content[:300]!r}")

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for future in [pool.submit(worker) for _ in range(concurrency)]:
            future.result()
    return time.monotonic() - started


def main():
    concurrency = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    partner_pair, partner_certificate = key_and_certificate("acme-as2")
    station_pair, station_certificate = key_and_certificate("edi-inbox-as2")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        (directory / "station.pem").write_bytes(station_pair)
        database = f"sqlite://{directory}/inbox.db"
        binary = str(RELEASE / "edi-inbox")
        subprocess.run([binary, "--database-url", database, "partner", "add", "acme", "--name", "ACME",
                        "--sender", "x12:ZZ:SENDER", "--as2-id", "ACMEAS2", "--as2-certificate",
                        partner_certificate.decode(), "--as2-security", "signed-encrypted"],
                       check=True, capture_output=True)
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="warn,edi_inbox=info")
        server = subprocess.Popen(
            [binary, "--database-url", database, "--bind", "127.0.0.1:0", "--auth", "open",
             "--as2-keys", str(directory / "station.pem"), "--rate-limit", "1000000", "serve"],
            stderr=subprocess.PIPE, text=True, env=environment)
        try:
            address = listening_address(server)
            threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
            organisation = Organization(as2_name="ACMEAS2", sign_key=partner_pair)
            receiver = Partner(as2_name="EDIINBOX", verify_cert=station_certificate, encrypt_cert=station_certificate,
                               sign=True, encrypt=True, compress=True, enc_alg="aes_256_cbc", digest_alg="sha256",
                               mdn_mode="SYNC", mdn_digest_alg="sha256")
            first = 100_000_000
            for label, size, count in SIZES:
                edi = interchanges(size, 2 * count, first)
                first += 2 * count
                plain = [({"content-type": "application/edi-x12"}, body) for body in edi[:count]]
                secured = []
                for body in edi[count:]:
                    message = Message(sender=organisation, receiver=receiver)
                    message.build(body, content_type="application/edi-x12")
                    secured.append((dict(message.headers), message.content))
                edi_bytes = sum(len(body) for body in edi[:count])
                for mode, requests, accept in [
                    ("plain", plain, lambda status, content: status == 201),
                    ("AS2", secured, lambda status, content: status == 200 and b"; processed\r\n" in content),
                ]:
                    cpu = cpu_seconds(server.pid)
                    seconds = drive(address, requests, concurrency, accept)
                    cpu = cpu_seconds(server.pid) - cpu
                    rows.append((label, mode, count, count / seconds, edi_bytes / seconds / 2**20, 1000 * cpu / count))
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"concurrency {concurrency}, SQLite, release build, one run")
    print(f"{'payload':8} {'door':6} {'messages':>8} {'msg/s':>9} {'MiB/s':>8} {'server CPU ms/msg':>18}")
    for label, mode, count, rate, mib, cpu in rows:
        print(f"{label:8} {mode:6} {count:8} {rate:9.1f} {mib:8.2f} {cpu:18.2f}")
    for n in range(0, len(rows), 2):
        plain, as2 = rows[n], rows[n + 1]
        print(f"{plain[0]}: AS2 reaches {as2[3] / plain[3]:.2f}x the plain rate, "
              f"at {as2[5] / plain[5]:.2f}x the server CPU per message")


if __name__ == "__main__":
    main()
