"""The official Standard Webhooks library (PyPI `standardwebhooks`) signs deliveries that a real
edi-inbox server accepts, and a delivery whose body was changed after signing is refused.

Starts the built binary on a fresh SQLite database with partner authentication, registers a partner
through the CLI, and posts over HTTP. Run by scripts/test through run.sh (which installs the packages).
Prints a closing `N passed, N failed` line.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import uuid

from standardwebhooks.webhooks import Webhook

from harness import SAMPLE, Checks, edi_inbox, listening_address, post as post_to


def post(address, body, headers):
    return post_to(f"http://{address}/v1/interchanges?partner=acme", body, headers)


def signed_headers(secret, body, msg_id):
    timestamp = datetime.datetime.now(tz=datetime.timezone.utc)
    signature = Webhook(secret).sign(msg_id, timestamp, body.decode("latin-1"))
    return {
        "content-type": "application/edi-x12",
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature,
    }


def main():
    checks = Checks()
    check = checks.check
    with tempfile.TemporaryDirectory() as directory:
        database = f"sqlite://{directory}/inbox.db"
        registered = json.loads(edi_inbox(database, "partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY"))
        secret = next(s["secret"] for s in registered["secrets"] if s["kind"] == "webhook_secret")
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info")
        server = edi_inbox(
            database, "--bind", "127.0.0.1:0", "--auth", "partners", "serve",
            stderr=subprocess.PIPE, text=True, env=environment,
        )
        try:
            address = listening_address(server)
            msg_id = f"msg_{uuid.uuid4().hex}"
            status, body = post(address, SAMPLE, signed_headers(secret, SAMPLE, msg_id))
            check("signed by the official library: 201", status == 201, (status, body))
            status, body = post(address, SAMPLE, signed_headers(secret, SAMPLE, f"msg_{uuid.uuid4().hex}"))
            check("signed resend: 200 replay", status == 200, (status, body))
            headers = signed_headers(secret, SAMPLE, f"msg_{uuid.uuid4().hex}")
            tampered = SAMPLE.replace(b"500*EA", b"900*EA")
            status, body = post(address, tampered, headers)
            check("body changed after signing: 401", status == 401 and body["type"] == "/problems/unauthorized", (status, body))
            other = Webhook("whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVoxMjM0NTY=")
            headers["webhook-signature"] = other.sign(headers["webhook-id"], datetime.datetime.now(tz=datetime.timezone.utc), SAMPLE.decode("latin-1"))
            status, body = post(address, SAMPLE, headers)
            check("signed with another secret: 401", status == 401, (status, body))
        finally:
            server.terminate()
            server.wait(timeout=30)
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
