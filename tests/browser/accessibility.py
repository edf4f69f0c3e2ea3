"""Lighthouse's accessibility audit (npm `lighthouse`, pinned, run with Debian's Chromium) of every
console page, signed in, on a server of its own with an interchange, its invoice and a refusal to
show. Each page must score at least 90; a failing audit is printed with the elements it names.
Usage: accessibility.py BINARY LIGHTHOUSE. Prints a closing `N passed, N failed` line.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ADMIN = "accessibility-admin-token-0123456789"
LEAST = 0.9


def call(address, method, path, body=None, headers=None):
    request = urllib.request.Request(f"http://{address}{path}", data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def main(binary, lighthouse):
    passed = failed = 0
    with tempfile.TemporaryDirectory() as work:
        log = open(pathlib.Path(work) / "server.log", "w+")
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", EDI_INBOX_ADMIN_TOKEN=ADMIN)
        server = subprocess.Popen([binary, "--bind", "127.0.0.1:0", "--database-url", f"sqlite://{work}/inbox.db",
                                   "serve"], stderr=log, env=environment)
        try:
            address = None
            for _ in range(100):
                log.seek(0)
                address = next((json.loads(line)["fields"]["address"] for line in log if '"listening"' in line), None)
                if address:
                    break
                time.sleep(0.1)
            edi = {"content-type": "application/edi-x12"}
            status, body = call(address, "POST", "/v1/interchanges", (FIXTURES / "x12/810-single.edi").read_bytes(), edi)
            assert status == 201, body
            booked = json.loads(body)
            call(address, "GET", "/v1/admin/partners", None, {"authorization": "Bearer a-wrong-token"})  # a refusal
            request = urllib.request.Request(f"http://{address}/console/sign-in", data=f"token={ADMIN}".encode())
            opener = urllib.request.build_opener(NoRedirect)
            try:
                opener.open(request, timeout=30)
            except urllib.error.HTTPError as answer:
                cookie = answer.headers["set-cookie"].split(";")[0]
            pages = ["/console/", "/console/interchanges", f"/console/interchanges/{booked['id']}",
                     f"/console/invoices/{booked['invoices'][0]['id']}", "/console/quarantine",
                     "/console/accounting", "/console/partners", "/console/refusals", "/console/audit",
                     "/console/sign-in"]
            for path in pages:
                headers = {} if path.endswith("sign-in") else {"Cookie": cookie}
                report = pathlib.Path(work) / "report.json"
                ran = subprocess.run(
                    [lighthouse, f"http://{address}{path}", "--only-categories=accessibility", "--quiet",
                     "--chrome-flags=--headless=new --no-sandbox", f"--extra-headers={json.dumps(headers)}",
                     "--output=json", f"--output-path={report}"],
                    env=dict(os.environ, CHROME_PATH="/usr/bin/chromium"), capture_output=True, text=True,
                    timeout=180)
                if ran.returncode != 0:
                    failed += 1
                    print(f"FAIL {path}: lighthouse stopped: {ran.stderr[-500:]}")
                    continue
                result = json.loads(report.read_text())
                score = result["categories"]["accessibility"]["score"]
                landed = result["finalDisplayedUrl"].split(address, 1)[-1]
                if score >= LEAST and landed == path:
                    passed += 1
                    print(f"ok   {path}: accessibility {round(score * 100)}")
                else:
                    failed += 1
                    faults = [f"{key}: {audit['title']}" for key, audit in result["audits"].items()
                              if audit.get("scoreDisplayMode") == "binary" and audit.get("score") == 0]
                    print(f"FAIL {path}: accessibility {round(score * 100)} (shown {landed}); {faults}")
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_):
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
