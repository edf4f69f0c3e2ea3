"""SNS message signatures as SNS makes them: this script signs HTTP(S) messages (SignatureVersion 1,
SHA1withRSA, and 2, SHA256withRSA) with its own certificate served over HTTPS on loopback, AWS's own
validator (npm `sns-validator`, run by sns_validate.js) checks independently that they are validly
signed, and the real edi-inbox binary, with partner authentication and no API key, books the
notification of a partner's topic and refuses (401, nothing stored) a message changed after
signing, a certificate off the trusted addresses, an unknown signature version and a topic that is
no partner's.

Run by scripts/test through run.sh. Prints a closing `N passed, N failed` line.
"""

import base64
import datetime
import http.server
import ipaddress
import json
import os
import pathlib
import ssl
import subprocess
import sys
import tempfile
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from harness import ROOT, SAMPLE, Checks, edi_inbox, listening_address, post, stored_interchanges

TOPIC = "arn:aws:sns:eu-west-1:123456789012:acme-invoices"
ADMIN_TOKEN = "admin-token-for-the-sns-check"
NODE_MODULES = ROOT / "target" / "clients-node" / "node_modules"


def certificate(subject, key, issuer=None, issuer_key=None, names=()):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer or subject)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    else:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    return builder.sign(issuer_key or key, hashes.SHA256())


def pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def string_to_sign(message):
    if message["Type"] == "Notification":
        keys = ["Message", "MessageId"] + (["Subject"] if message.get("Subject") else []) + ["Timestamp", "TopicArn", "Type"]
    else:
        keys = ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
    return "".join(f"{key}\n{message[key]}\n" for key in keys).encode()


def signed(key, message):
    digest = hashes.SHA1() if message["SignatureVersion"] == "1" else hashes.SHA256()
    signature = key.sign(string_to_sign(message), padding.PKCS1v15(), digest)
    return dict(message, Signature=base64.b64encode(signature).decode())


def serve_https(directory, files):
    """An HTTPS server on loopback with a certificate of its own CA (returned for the clients to trust)."""
    ca_key, tls_key = rsa.generate_private_key(65537, 2048), rsa.generate_private_key(65537, 2048)
    ca = certificate("edi-inbox test CA", ca_key)
    tls = certificate("127.0.0.1", tls_key, "edi-inbox test CA", ca_key,
                      [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")])
    (directory / "ca.pem").write_bytes(pem(ca))
    (directory / "tls.pem").write_bytes(pem(tls))
    (directory / "tls.key").write_bytes(tls_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

    class Files(http.server.BaseHTTPRequestHandler):
        served = 0

        def do_GET(self):
            Files.served += 1
            body = files.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("content-length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "tls.pem", directory / "tls.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.handler = Files
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"https://127.0.0.1:{server.server_address[1]}"


def aws_validator(messages, ca):
    """Which of `messages` AWS's own validator finds validly signed."""
    environment = dict(os.environ, NODE_PATH=str(NODE_MODULES), NODE_EXTRA_CA_CERTS=str(ca))
    result = subprocess.run(
        ["node", str(ROOT / "tests" / "clients" / "sns_validate.js"), r"^127\.0\.0\.1:\d+$"],
        input=json.dumps(messages), capture_output=True, text=True, env=environment, check=True,
    )
    return json.loads(result.stdout)


def notification(control, version, certificate_url, **changes):
    message = {
        "Type": "Notification",
        "MessageId": f"sns-{control}-{version}",
        "TopicArn": TOPIC,
        "Subject": "invoice",
        "Message": SAMPLE.replace(b"000001142", control.encode()).decode(),
        "Timestamp": "2026-12-04T02:00:00.000Z",
        "SignatureVersion": version,
        "SigningCertURL": certificate_url,
    }
    message.update(changes)
    return message


def main():
    checks = Checks()
    check = checks.check
    assert SAMPLE.count(b"000001142") == 2, "the sample's ISA13 and IEA02"
    signing_key = rsa.generate_private_key(65537, 2048)
    signing_certificate = pem(certificate("sns.eu-west-1.amazonaws.com", signing_key))
    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        files = {}
        server_of_certificates, base = serve_https(directory, files)
        files["/SimpleNotificationService-test.pem"] = signing_certificate
        url = f"{base}/SimpleNotificationService-test.pem"
        sign = lambda message: signed(signing_key, message)
        first = sign(notification("000000801", "1", url))
        resent = sign(notification("000000801", "2", url))
        tampered = dict(sign(notification("000000802", "2", url)))
        tampered["Message"] = tampered["Message"].replace("500*EA", "900*EA")
        off_pattern = sign(notification("000000803", "1", "https://sns.eu-west-1.amazonaws.com.evil.example/c.pem"))
        version_3 = sign(dict(notification("000000804", "2", url)))
        version_3["SignatureVersion"] = "3"
        stranger = sign(notification("000000805", "2", url, TopicArn="arn:aws:sns:eu-west-1:999999999999:other"))
        verdicts = aws_validator([first, resent, tampered, version_3, stranger], directory / "ca.pem")
        check("AWS's validator accepts the signed messages and refuses the changed one",
              verdicts == [True, True, False, False, True], verdicts)

        fetched_by_the_validator = server_of_certificates.handler.served
        database = f"sqlite://{directory}/inbox.db"
        edi_inbox(database, "partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY", "--sns-topic", TOPIC)
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info", SSL_CERT_FILE=str(directory / "ca.pem"))
        server = edi_inbox(
            database, "--bind", "127.0.0.1:0", "--auth", "partners", "--admin-token", ADMIN_TOKEN,
            "--sns-cert-urls", "https://127.0.0.1:*/", "serve",
            stderr=subprocess.PIPE, text=True, env=environment,
        )
        try:
            address = listening_address(server)
            endpoint = f"http://{address}/v1/interchanges"

            def send(message):
                headers = {"content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": message["Type"],
                           "x-amz-sns-message-id": message["MessageId"], "x-amz-sns-topic-arn": message["TopicArn"]}
                return post(endpoint, json.dumps(message).encode(), headers)

            status, body = send(first)
            check("a notification signed with SignatureVersion 1 books: 201", status == 201, (status, body))
            status, body = send(resent)
            check("the same interchange signed with SignatureVersion 2: 200 replay", status == 200, (status, body))
            fetched = server_of_certificates.handler.served
            check("edi-inbox fetched the signing certificate once", fetched - fetched_by_the_validator == 1,
                  fetched - fetched_by_the_validator)
            for name, message in [("one changed byte", tampered), ("a certificate off the trusted addresses", off_pattern),
                                  ("SignatureVersion 3", version_3), ("a topic of no partner", stranger)]:
                status, body = send(message)
                check(f"{name}: 401", status == 401 and body["type"] == "/problems/unauthorized", (status, body))
            check("a certificate off the trusted addresses is not fetched", server_of_certificates.handler.served == fetched,
                  server_of_certificates.handler.served)
            stored = stored_interchanges(endpoint, ADMIN_TOKEN)
            check("nothing refused was stored", len(stored) == 1, stored)
        finally:
            server.terminate()
            server.wait(timeout=30)
            server_of_certificates.shutdown()
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
