"""A person at the operator console, in Debian's Chromium driven by Playwright, against the binary.

The script starts edi-inbox itself (partner authentication, an admin token, SQLite in a temporary
directory) with a local accounting API (a Python HTTP server) that refuses every invoice (422, so
each outbox message is dead at once) until it is told to book, and registers two operators, `olga`
and `pavel`, with `edi-inbox operator add`. Then, in the browser, as olga: sign in; see a delivery
made meanwhile appear on the overview without reloading; search by a partial control number and by
invoice number; filter the interchanges to one, open it and see its invoice and delivery attempts;
compare a held conflict with its original and release it; discard a held invalid interchange. As
pavel, in a browser of his own: retry all 50 dead letters at once once the accounting API books,
and see them delivered. As olga again: see both operators' actions in the audit; sign out in one
tab and see the other tab say so, then sign in again and land on the page asked for. Then restart
the server and find the signed-out cookie still refused. Every step leaves a screenshot in
target/browser/console-*.png. Usage: console.py BINARY. Prints a closing `N passed, N failed` line.
"""

import http.server
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from playwright.sync_api import expect, sync_playwright

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ADMIN = "console-admin-token"
SHOTS = ROOT / "target" / "browser"


class Accounting(http.server.BaseHTTPRequestHandler):
    """The accounting API: 422 until `books` is set, then 201 with a reference."""

    books = False
    received = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        Accounting.received += 1
        if Accounting.books:
            answer, status = json.dumps({"id": f"ACC-{Accounting.received}"}).encode(), 201
        else:
            answer, status = b"ledger period 2026-03 is closed", 422
        self.send_response(status)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *_):
        pass


def request(address, method, path, body=None, headers=None):
    call = urllib.request.Request(f"http://{address}{path}", data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(call, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def add_operator(binary, work, name):
    """Registers an operator on the server's database, as an administrator would."""
    subprocess.run([binary, "--database-url", f"sqlite://{work}/inbox.db", "operator", "add", name,
                    "--password-stdin"], input=password_of(name) + "\n", text=True, check=True,
                   capture_output=True)


def password_of(name):
    return f"{name}'s long password"


def start(binary, work, accounting_url):
    environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", EDI_INBOX_ADMIN_TOKEN=ADMIN,
                       EDI_INBOX_RELAY_POLL_MS="200")
    log = open(work / "server.log", "w+")
    server = subprocess.Popen([binary, "--bind", "127.0.0.1:0", "--auth", "partners",
                               "--database-url", f"sqlite://{work}/inbox.db", "--accounting-url", accounting_url,
                               "serve"], stderr=log, env=environment)
    for _ in range(100):
        log.seek(0)
        for line in log:
            if '"listening"' in line:
                return server, json.loads(line)["fields"]["address"]
        time.sleep(0.1)
    raise SystemExit("edi-inbox did not start:\n" + (work / "server.log").read_text())


def main(binary):
    passed = failed = 0

    def check(name, step):
        nonlocal passed, failed
        try:
            step()
            passed += 1
            print(f"ok   {name}")
        except Exception as error:  # an assertion or a Playwright timeout: reported, the run goes on
            failed += 1
            print(f"FAIL {name}: {str(error).splitlines()[0] if str(error) else type(error).__name__}")

    accounting = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Accounting)
    threading.Thread(target=accounting.serve_forever, daemon=True).start()
    work = pathlib.Path(tempfile.mkdtemp(prefix="edi-inbox-console-"))
    server, address = start(binary, work, f"http://127.0.0.1:{accounting.server_port}/invoices")
    add_operator(binary, work, "olga")
    add_operator(binary, work, "pavel")
    try:
        admin = {"authorization": f"Bearer {ADMIN}", "content-type": "application/json"}
        status, body = request(address, "POST", "/v1/admin/partners", json.dumps({
            "id": "acme", "name": "ACME Supply", "senders": ["x12:ZZ:ACMESUPPLY"],
            "conflict_policy": "quarantine"}).encode(), admin)
        assert status == 201, body
        key = next(s["secret"] for s in json.loads(body)["secrets"] if s["kind"] == "api_key")

        def deliver(name, *replacements):
            payload = (FIXTURES / "x12" / name).read_bytes()
            for replace in replacements:
                payload = payload.replace(*replace)
            return request(address, "POST", "/v1/interchanges", payload,
                           {"authorization": f"Bearer {key}", "content-type": "application/edi-x12"})

        assert deliver("810-single.edi")[0] == 201  # refused by the accounting API: a dead letter
        assert deliver("810-single-conflict.edi")[0] == 202  # held: conflicts with the first
        assert deliver("invalid-se-count.edi", (b"000001142", b"000007001"))[0] == 202  # held: invalid
        for n in range(48):  # invoices of their own, refused by the accounting API too: 48 more dead letters
            assert deliver("810-single.edi", (b"000001142", f"0000090{n:02d}".encode()),
                           (b"INV-1042", f"INV-9{n:02d}".encode()))[0] == 201

        SHOTS.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            tabs = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = tabs.new_page()
            blocked = []
            page.on("console", lambda message: blocked.append(message.text) if "Content Security Policy" in message.text else None)
            base = f"http://{address}/console"

            def sign_in():
                page.goto(f"{base}/")
                expect(page).to_have_url(f"{base}/sign-in")
                page.fill("#name", "olga")
                page.fill("#password", password_of("olga"))
                page.screenshot(path=str(SHOTS / "console-sign-in.png"))
                page.click("text=Sign in >> nth=0")
                expect(page.locator("h1")).to_have_text("Overview")
            check("sign in as a named operator", sign_in)

            def fresh_delivery_appears():
                expect(page.locator("#latest")).not_to_contain_text("000008123")
                # The first invoice again in a new envelope: recorded, a duplicate, never booked again.
                assert deliver("810-single.edi", (b"000001142", b"000008123"))[0] == 201
                expect(page.locator("#latest")).to_contain_text("000008123", timeout=15000)
                page.screenshot(path=str(SHOTS / "console-overview.png"), full_page=True)
            check("a fresh delivery appears on the overview by itself", fresh_delivery_appears)

            def search():
                page.click("nav >> text=Interchanges")
                page.fill("input[name=q]", "8123")  # a partial control number
                page.click("form.filters button[type=submit]")
                expect(page.locator("#interchanges tbody tr")).to_have_count(1)
                expect(page.locator("#interchanges")).to_contain_text("000008123")
                page.fill("input[name=q]", "INV-1042")  # an invoice number: every 810 delivered
                page.click("form.filters button[type=submit]")
                expect(page.locator("#interchanges tbody tr", has_text="INV-1042").first).to_be_visible()
                expect(page.locator("#interchanges")).to_contain_text("000008123")
                page.screenshot(path=str(SHOTS / "console-search.png"))
                page.goto(f"{base}/interchanges")
            check("search by a partial control number and by invoice number", search)

            def filter_and_open():
                page.click("nav >> text=Interchanges")
                page.fill("input[name=control_number]", "000008123")
                page.select_option("select[name=partner]", "acme")
                page.click("form.filters button[type=submit]")
                rows = page.locator("#interchanges tbody tr")
                expect(rows).to_have_count(1)
                page.screenshot(path=str(SHOTS / "console-interchanges.png"))
                rows.first.locator("a").click()
                expect(page.locator("#invoices tbody tr")).to_have_count(1)
                expect(page.locator("#invoices")).to_contain_text("INV-1042")
                expect(page.locator("#deliveries tbody tr")).to_have_count(1)
                expect(page.locator("#deliveries")).to_contain_text("recorded")
                expect(page.locator("#ack")).to_contain_text("AK5*A")
                page.screenshot(path=str(SHOTS / "console-interchange.png"), full_page=True)
            check("filter to it, open it: its invoice, delivery attempt and 997", filter_and_open)

            def release_conflict():
                page.click("nav >> text=Quarantine")
                expect(page.locator("#quarantine tbody tr")).to_have_count(2)
                page.locator("#quarantine tbody tr", has_text="conflict").locator("a").click()
                expect(page.locator("#diff .removed").first).to_be_visible()
                expect(page.locator("#diff .added").first).to_be_visible()
                # Its invoice against the one booked under INV-1042, field by field.
                expect(page.locator("table.compared")).to_contain_text("8000.00")
                expect(page.locator("table.compared")).to_contain_text("8008.75")
                page.screenshot(path=str(SHOTS / "console-quarantine.png"), full_page=True)
                # It re-uses INV-1042 with another quantity: booked as a new invoice.
                page.click("#decide >> text=Book as a new invoice")
                expect(page.locator(".notice")).to_contain_text("Released")
                expect(page.locator("#quarantine tbody tr")).to_have_count(1)
            check("compare a held conflict with its original and release it", release_conflict)

            def discard_invalid():
                page.locator("#quarantine tbody tr", has_text="invalid").locator("a").click()
                # Discard asks first: dismissed, nothing happens; accepted, it is discarded.
                asked = []
                page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
                page.click("#decide >> text=Discard")
                assert asked and "Discard" in asked[0], asked
                expect(page.locator("#decide >> text=Discard")).to_be_visible()
                page.once("dialog", lambda dialog: dialog.accept())
                page.click("#decide >> text=Discard")
                expect(page.locator(".notice")).to_contain_text("Discarded")
                expect(page.locator("#quarantine tbody tr")).to_have_count(0)
                status, body = request(address, "GET", "/v1/admin/quarantine?status=discarded", None, admin)
                assert len(json.loads(body)["items"]) == 1, body
            check("discard a held invalid interchange, once confirmed", discard_invalid)

            def bulk_retry_as_another_operator():
                # Every invoice booked so far was refused: 49 delivered (the resent one a duplicate) and
                # the released one.
                second = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                second.goto(f"{base}/sign-in")
                second.fill("#name", "pavel")
                second.fill("#password", password_of("pavel"))
                second.click("text=Sign in >> nth=0")
                second.click("nav >> text=Accounting")
                group = second.locator("#groups tbody tr", has_text="ledger period 2026-03 is closed")
                for _ in range(75):
                    if group.count() and "50" in group.locator("td.num").inner_text():
                        break
                    time.sleep(0.2)
                    second.reload()
                expect(group.locator("td.num")).to_have_text("50")
                second.screenshot(path=str(SHOTS / "console-accounting.png"))
                Accounting.books = True
                group.locator("text=Retry all").click()
                expect(second.locator("h1")).to_have_text("Retry: 50 of 50 dead letters")
                expect(second.locator("#results .status-pending")).to_have_count(50)
                for _ in range(100):
                    second.goto(f"{base}/accounting?status=delivered")
                    if second.locator("#outbox tbody tr", has_text="ACC-").count() == 50:
                        break
                    time.sleep(0.2)
                expect(second.locator("#outbox tbody tr", has_text="ACC-")).to_have_count(50)
                second.context.close()
            check("a second operator retries all 50 dead letters at once: delivered", bulk_retry_as_another_operator)

            def audit_names_the_operator():
                page.click("nav >> text=Audit")
                expect(page.locator("#actions tbody tr", has_text="quarantine.release")).to_contain_text("console:olga")
                retried = page.locator("#actions tbody tr", has_text="outbox.retry")
                expect(retried.first).to_contain_text("console:pavel")
                expect(retried.first).to_contain_text("dead")
                page.screenshot(path=str(SHOTS / "console-audit.png"))
            check("the audit names the operator of each action, with the state before and after",
                  audit_names_the_operator)

            signed_out = []

            def sign_out():
                other = tabs.new_page()
                other.goto(f"{base}/")
                expect(other.locator("h1")).to_have_text("Overview")
                signed_out.extend(cookie for cookie in tabs.cookies() if cookie["name"] == "edi_inbox_console")
                page.click("text=Sign out")
                expect(page).to_have_url(f"{base}/sign-in")
                expect(other.locator("#signed-out")).to_contain_text("Signed out", timeout=15000)
                other.screenshot(path=str(SHOTS / "console-other-tab-signed-out.png"))
                page.goto(f"{base}/partners")
                expect(page).to_have_url(f"{base}/sign-in?next=%2Fconsole%2Fpartners")
                page.fill("#name", "olga")
                page.fill("#password", password_of("olga"))
                page.click("text=Sign in >> nth=0")
                expect(page).to_have_url(f"{base}/partners")
                page.screenshot(path=str(SHOTS / "console-signed-out.png"))
            check("sign out in one tab: the other says so, and signing in goes back to the page", sign_out)

            def nothing_blocked():
                assert not blocked, blocked
            check("the Content-Security-Policy blocked nothing the console uses", nothing_blocked)

            # The server restarted on the same database: the signed-out session stays signed out.
            server.terminate()
            server.wait(timeout=30)
            server, address = start(binary, work, f"http://127.0.0.1:{accounting.server_port}/invoices")

            def restart_keeps_the_sign_out():
                assert signed_out, "the session's cookie was read before signing out"
                stale = browser.new_context()
                stale.add_cookies(signed_out)
                again = stale.new_page()
                again.goto(f"http://{address}/console/")
                expect(again).to_have_url(f"http://{address}/console/sign-in")
                stale.close()
            check("after a restart the signed-out cookie is still refused", restart_keeps_the_sign_out)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        accounting.shutdown()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
