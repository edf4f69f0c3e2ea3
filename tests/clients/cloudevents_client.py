"""The official CloudEvents SDK (PyPI `cloudevents`) builds binary-mode and structured-mode events
(with `data` and with `data_base64`) that a real edi-inbox server accepts: one interchange, 201 then
200s, each attempt audited under its ce-id; the webhook validation handshake answers a configured
origin. Run by scripts/test through run.sh. Prints a closing `N passed, N failed` line.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from cloudevents.conversion import to_binary, to_structured
from cloudevents.http import CloudEvent

from harness import SAMPLE, Checks, edi_inbox, listening_address, post


def event(data, event_id):
    attributes = {
        "id": event_id,
        "type": "org.x12.invoice.810",
        "source": "/partners/acme/as2-gateway",
        "datacontenttype": "application/edi-x12",
    }
    return CloudEvent(attributes, data)


def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as directory:
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info", EDI_INBOX_ADMIN_TOKEN="ce-admin")
        server = edi_inbox(
            f"sqlite://{directory}/inbox.db", "--bind", "127.0.0.1:0", "--webhook-allowed-origins", "events.example",
            "serve", stderr=subprocess.PIPE, text=True, env=environment,
        )
        try:
            url = f"http://{listening_address(server)}/v1/interchanges"
            ids = [f"ce-{uuid.uuid4().hex}" for _ in range(3)]
            headers, body = to_binary(event(SAMPLE, ids[0]))
            status, first = post(url, body, headers)
            checks.check("binary mode: 201", status == 201, (status, first))
            headers, body = to_structured(event(SAMPLE.decode(), ids[1]))
            sent = json.loads(body)
            status, replay = post(url, body, headers)
            checks.check("structured mode with data: 200 replay", status == 200 and replay["id"] == first["id"], (status, replay, sent))
            headers, body = to_structured(event(SAMPLE, ids[2]))
            sent = json.loads(body)
            status, replay = post(url, body, headers)
            checks.check("structured mode with data_base64: 200 replay",
                         status == 200 and "data_base64" in sent and replay["id"] == first["id"], (status, replay, sent))
            request = urllib.request.Request(f"{url}/{first['id']}/deliveries", headers={"Authorization": "Bearer ce-admin"})
            for _ in range(50):  # replays are audited in the background, within a fraction of a second
                with urllib.request.urlopen(request, timeout=30) as response:
                    audited = json.loads(response.read())["items"]
                seen = [row["transport_id"] for row in audited if row["door"] == "cloudevents"]
                if len(seen) == len(ids):
                    break
                time.sleep(0.1)
            checks.check("every attempt audited under its ce-id", sorted(seen) == sorted(ids), audited)
            handshake = urllib.request.Request(url, method="OPTIONS", headers={"WebHook-Request-Origin": "events.example"})
            with urllib.request.urlopen(handshake, timeout=30) as response:
                allowed = response.headers.get("WebHook-Allowed-Origin")
            checks.check("webhook handshake: allowed origin", allowed == "events.example", allowed)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
