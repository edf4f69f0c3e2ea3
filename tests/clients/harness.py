"""What the official-client checks share: the built binary on a fresh SQLite database, its
address once it listens, posting over HTTP, and counting checks."""

import json
import pathlib
import subprocess
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = ROOT / "target" / "debug" / "edi-inbox"
SAMPLE = (ROOT / "tests" / "fixtures" / "x12" / "810-single.edi").read_bytes()


def edi_inbox(database, *args, **popen):
    command = [str(BINARY), "--database-url", database, *args]
    if popen:
        return subprocess.Popen(command, **popen)
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def listening_address(server):
    for line in server.stderr:
        event = json.loads(line)
        if event.get("fields", {}).get("message") == "listening":
            return event["fields"]["address"]
    raise RuntimeError("the server stopped before listening")


def post(url, body, headers):
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def stored_interchanges(url, admin_token):
    """The control numbers of the interchanges stored, read with the admin token from `url`."""
    listing = urllib.request.Request(url, headers={"authorization": f"Bearer {admin_token}"})
    with urllib.request.urlopen(listing, timeout=30) as response:
        return [item["control_number"] for item in json.loads(response.read())["items"]]


class Checks:
    """Counts checks and prints one line each, then a closing `N passed, N failed` line."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, condition, detail):
        if condition:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")

    def exit_code(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
