"""AS2 as a partner's gateway speaks it: pyas2lib (the library behind django-pyas2) builds every
message — compressed, signed and encrypted in its own nesting — posts it to the real edi-inbox binary
(partner authentication, no API key: the signature is the proof), and parses and verifies the MDN it
gets back with its own code (signature checked against edi-inbox's certificate, MIC compared with
the one pyas2lib computed when it signed). Asynchronous MDNs go to a listener on loopback. Then a
server with no AS2 key configured: the key it generates, its certificate downloaded, a signed MDN.

Run by scripts/test through run.sh. Prints a closing `N passed, N failed` line.
"""

import datetime
import http.server
import json
import os
import pathlib
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from asn1crypto import cms
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

import oscrypto_openssl3  # noqa: F401  (before pyas2lib: see the module)
from pyas2lib import Mdn, Message, Organization, Partner

from harness import SAMPLE, Checks, edi_inbox, listening_address, stored_interchanges

ADMIN_TOKEN = "admin-token-for-the-as2-check"
PARTNER_AS2 = "ACME AS2"
OUR_AS2 = "EDIINBOX"


def key_and_certificate(name):
    key = rsa.generate_private_key(65537, 2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    certificate = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem + certificate.public_bytes(serialization.Encoding.PEM), certificate.public_bytes(serialization.Encoding.PEM)


def edi(control):
    assert SAMPLE.count(b"000001142") == 2, "the sample's ISA13 and IEA02"
    return SAMPLE.replace(b"000001142", control.encode())


class Receipts(http.server.BaseHTTPRequestHandler):
    """Asynchronous MDNs, as received: the raw headers and body."""
    arrived = queue.Queue()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        raw = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items()).encode() + b"\r\n" + body
        Receipts.arrived.put(raw)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    checks = Checks()
    check = checks.check
    partner_pair, partner_certificate = key_and_certificate("acme-as2")
    stranger_pair, _ = key_and_certificate("mallory-as2")
    station_pair, station_certificate = key_and_certificate("edi-inbox-as2")
    _, other_station_certificate = key_and_certificate("not-edi-inbox")
    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receipts)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    mdn_url = f"http://127.0.0.1:{listener.server_address[1]}/as2/mdn"

    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        (directory / "station.pem").write_bytes(station_pair)
        database = f"sqlite://{directory}/inbox.db"
        added = edi_inbox(database, "partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY",
                  "--as2-id", PARTNER_AS2, "--as2-certificate", partner_certificate.decode(),
                  "--as2-security", "signed", "--as2-mdn-url", mdn_url)
        api_key = json.loads(added[:added.rindex("}") + 1])["secrets"][0]["secret"]
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info")
        server = edi_inbox(
            database, "--bind", "127.0.0.1:0", "--auth", "partners", "--admin-token", ADMIN_TOKEN,
            "--as2-keys", str(directory / "station.pem"), "--as2-receiver-ids", OUR_AS2, "serve",
            stderr=subprocess.PIPE, text=True, env=environment,
        )
        try:
            endpoint = f"http://{listening_address(server)}/v1/interchanges"

            def gateway(sign_with=partner_pair, encrypt_to=station_certificate, **settings):
                """pyas2lib's sender side: our organisation and edi-inbox as its partner."""
                organisation = Organization(as2_name=PARTNER_AS2, sign_key=sign_with, mdn_url=mdn_url)
                options = dict(sign=True, encrypt=True, compress=True, enc_alg="aes_256_cbc", digest_alg="sha256",
                               mdn_mode="SYNC", mdn_digest_alg="sha256")
                options.update(settings)
                partner = Partner(as2_name=OUR_AS2, verify_cert=station_certificate, encrypt_cert=encrypt_to, **options)
                return Message(sender=organisation, receiver=partner)

            def send(message, body=None):
                request = urllib.request.Request(endpoint, data=body or message.content, headers=message.headers)
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, headers, content = answer.status, answer.headers, answer.read()
                except urllib.error.HTTPError as error:
                    status, headers, content = error.code, error.headers, error.read()
                raw = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode() + b"\r\n" + content
                return status, raw

            def receipt(message, raw):
                """pyas2lib's own reading of an MDN: (status, detail), the signature verified."""
                return Mdn().parse(raw, lambda message_id, recipient: message)

            def built(control, message_id=None, **settings):
                message = gateway(**settings)
                message.build(edi(control), content_type="application/edi-x12", message_id=message_id)
                return message

            first = built("000000901", message_id="as2-first")
            status, raw = send(first)
            verdict = receipt(first, raw)
            check("signed+encrypted+compressed, signed sync MDN: HTTP 200, processed with pyas2lib's MIC",
                  status == 200 and verdict == ("processed", None), (status, verdict, raw[raw.find(b'text/plain'):][:700]))
            check("the MDN is signed (multipart/signed) and names the message",
                  b"multipart/signed" in raw and f"<{first.message_id}>".encode() in raw, raw[:400])
            mic = [line for line in raw.split(b"\r\n") if line.startswith(b"Received-Content-MIC")]
            check("Received-Content-MIC equals the MIC pyas2lib computed",
                  mic == [b"Received-Content-MIC: " + first.mic + b", sha256"], (mic, first.mic))

            report = lambda raw: raw.split(b"\r\n\r\n", 1)[1].split(b"application/pkcs7-signature")[0]
            first_report = report(raw)
            status, raw = send(first)
            check("the same message again: processed", receipt(first, raw) == ("processed", None), raw[:400])
            check("... with the same MDN, byte for byte but for its signature", report(raw) == first_report,
                  (report(raw)[:300], first_report[:300]))
            again = built("000000901", message_id="as2-first-resent")
            status, raw = send(again)
            check("the same EDI under a new Message-ID: processed", receipt(again, raw) == ("processed", None), raw[:400])
            stored = stored_interchanges(endpoint, ADMIN_TOKEN)
            check("one interchange for the three deliveries", stored == ["000000901"], stored)

            tampered = built("000000902", encrypt=False, compress=False)
            body = tampered.content.replace(b"ACME SUPPLY", b"ACME SUPPLX", 1)
            check("the tampering hits the signed content", body != tampered.content, "unchanged")
            status, raw = send(tampered, body)
            check("tampered content: integrity-check-failed",
                  receipt(tampered, raw) == ("processed/error", "integrity-check-failed"), raw[:600])
            stranger = built("000000903", sign_with=stranger_pair, encrypt=False)
            status, raw = send(stranger)
            check("signed with another certificate: authentication-failed",
                  receipt(stranger, raw) == ("processed/error", "authentication-failed"), raw[:600])
            unsigned = built("000000904", sign=False, mdn_digest_alg=None)
            status, raw = send(unsigned)
            check("unsigned without an API key: authentication-failed (a stranger learns no requirement)",
                  receipt(unsigned, raw) == ("processed/error", "authentication-failed"), raw[:600])
            keyed = gateway(sign=False, mdn_digest_alg=None)
            keyed.build(edi("000000904"), content_type="application/edi-x12",
                        additional_headers={"Authorization": f"Bearer {api_key}"})
            status, raw = send(keyed)
            check("unsigned with the partner's API key, the partner must sign: insufficient-message-security",
                  receipt(keyed, raw) == ("processed/error", "insufficient-message-security"), raw[:600])
            wrong_key = built("000000905", encrypt_to=other_station_certificate)
            status, raw = send(wrong_key)
            verdict = receipt(wrong_key, raw)
            check("encrypted to another certificate: decryption-failed",
                  verdict == ("processed/error", "decryption-failed"), raw[:600])
            garbage = built("000000906", compress=False)
            for at in (-20, -40, -400):  # the padding block, and blocks inside the signed content
                body = bytearray(garbage.content)
                body[at] ^= 0x55
                status, raw = send(garbage, bytes(body))
                check(f"a ciphertext changed at byte {at} gets the same answer as a wrong key (no padding oracle)",
                      receipt(garbage, raw) == verdict and b"padding" not in raw.lower(), receipt(garbage, raw))
            for flip in (False, True):  # its last two blocks appended again: a valid padding, then not
                captured = cms.ContentInfo.load(garbage.content)
                encrypted = captured["content"]["encrypted_content_info"]
                blocks = encrypted["encrypted_content"].native
                appended = bytearray(blocks + blocks[-32:])
                if flip:
                    appended[-17] ^= 0x5A
                encrypted["encrypted_content"] = bytes(appended)
                status, raw = send(garbage, captured.dump(force=True))
                check(f"ciphertext blocks appended ({'invalid' if flip else 'valid'} padding): the same answer as a wrong key",
                      receipt(garbage, raw) == verdict, receipt(garbage, raw))
            message = built("000000907", mdn_mode="ASYNC")
            headers = {k: v for k, v in message.headers.items() if k.lower() != "receipt-delivery-option"}
            headers["Receipt-Delivery-Option"] = "http://169.254.169.254/latest"
            request = urllib.request.Request(endpoint, data=message.content, headers=headers)
            with urllib.request.urlopen(request, timeout=30) as answer:
                raw = "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items()).encode() + b"\r\n" + answer.read()
            check("an asynchronous MDN to an address not registered: error MDN in the answer, nothing fetched",
                  receipt(message, raw) == ("processed/error", "unexpected-processing-error") and Receipts.arrived.empty(),
                  raw[:600])
            stored = stored_interchanges(endpoint, ADMIN_TOKEN)
            check("nothing refused was booked", stored == ["000000901"], stored)

            legacy = built("000000908", enc_alg="tripledes_192_cbc", digest_alg="sha1", mdn_digest_alg="sha1")
            status, raw = send(legacy)
            check("3DES and SHA-1 (pyas2lib's defaults): processed", receipt(legacy, raw) == ("processed", None), raw[:600])

            later = built("000000909", mdn_mode="ASYNC")
            status, raw = send(later)
            check("asynchronous MDN: HTTP 200 without a body", status == 200 and raw.endswith(b"\r\n\r\n"), raw[:300])
            arrived = Receipts.arrived.get(timeout=30)
            check("the asynchronous MDN reaches the registered URL: processed",
                  receipt(later, arrived) == ("processed", None), arrived[:600])

            stored = stored_interchanges(endpoint, ADMIN_TOKEN)
            check("three interchanges booked in all", sorted(stored) == ["000000901", "000000908", "000000909"], stored)
            listing = urllib.request.Request(endpoint + "?control_number=000000901",
                                             headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
            with urllib.request.urlopen(listing, timeout=30) as answer:
                interchange = json.loads(answer.read())["items"][0]["id"]
            attempts = urllib.request.Request(f"{endpoint}/{interchange}/deliveries",
                                              headers={"authorization": f"Bearer {ADMIN_TOKEN}"})
            deadline = time.monotonic() + 10
            while True:  # a resend's audit row is written in the background, within a second or so
                with urllib.request.urlopen(attempts, timeout=30) as answer:
                    items = json.loads(answer.read())["items"]
                if len(items) >= 3 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            seen = [(item["transport_id"], item["transport"].get("mdn"), item["transport"].get("signed")) for item in items]
            check("the deliveries show each AS2 Message-ID, the MDN's disposition and the signature",
                  seen == [(f"<{first.message_id}>", "processed", True)] * 2 + [(f"<{again.message_id}>", "processed", True)],
                  seen)
        finally:
            server.terminate()
            server.wait(timeout=30)
            listener.shutdown()
    first_start(checks)
    return checks.exit_code()


def first_start(checks):
    """A server started with no AS2 key configured, as `cargo run` starts it: it generates one beside
    its SQLite database (mode 0600), serves the certificate, and pyas2lib, encrypting to the
    downloaded certificate, gets a signed MDN it verifies with it; a restart keeps the key."""
    check = checks.check
    partner_pair, partner_certificate = key_and_certificate("acme-as2")
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        database = f"sqlite://{directory}/inbox.db"
        edi_inbox(database, "partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY",
                  "--as2-id", PARTNER_AS2, "--as2-certificate", partner_certificate.decode(), "--as2-security", "signed")
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info")
        certificates = []
        for start in ("first", "second"):
            server = edi_inbox(database, "--bind", "127.0.0.1:0", "serve", stderr=subprocess.PIPE, text=True,
                               env=environment)
            try:
                address = listening_address(server)
                with urllib.request.urlopen(f"http://{address}/v1/as2/certificate", timeout=30) as answer:
                    pem = answer.read()
                    media_type = answer.headers.get("content-type")
                asked = urllib.request.Request(f"http://{address}/v1/as2/certificate",
                                               headers={"accept": "application/pkix-cert"})
                with urllib.request.urlopen(asked, timeout=30) as answer:
                    der = answer.read()
                certificate = x509.load_pem_x509_certificate(pem)
                certificates.append(certificate)
                check(f"{start} start: the certificate is served as PEM and as the same DER",
                      media_type == "application/pem-certificate-chain"
                      and certificate == x509.load_der_x509_certificate(der), media_type)
                organisation = Organization(as2_name=PARTNER_AS2, sign_key=partner_pair)
                partner = Partner(as2_name="edi-inbox", verify_cert=pem, encrypt_cert=pem, sign=True, encrypt=True,
                                  enc_alg="aes_256_cbc", digest_alg="sha256", mdn_mode="SYNC", mdn_digest_alg="sha256")
                message = Message(sender=organisation, receiver=partner)
                message.build(edi("00000091" + str(len(certificates))), content_type="application/edi-x12")
                request = urllib.request.Request(f"http://{address}/v1/interchanges", data=message.content,
                                                 headers=message.headers)
                with urllib.request.urlopen(request, timeout=30) as answer:
                    raw = "".join(f"{k}: {v}\r\n" for k, v in answer.headers.items()).encode() + b"\r\n" + answer.read()
                verdict = Mdn().parse(raw, lambda message_id, recipient: message)
                check(f"{start} start: signed+encrypted to it, a signed MDN asked: processed, verified by pyas2lib",
                      verdict == ("processed", None) and b"multipart/signed" in raw, (verdict, raw[:600]))
            finally:
                server.terminate()
                server.wait(timeout=30)
        key_file = directory / "as2-key.pem"
        check("the generated key is beside the database, readable by its owner only",
              key_file.exists() and key_file.stat().st_mode & 0o777 == 0o600, key_file)
        check("a restart keeps the key", certificates[0] == certificates[1], certificates)


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.1f} s)")
    sys.exit(code)
