"""A TypeScript client of the served document, unedited: openapi-typescript turns the document the
binary serves into types, `typescript/client.ts` uses them with openapi-fetch, tsc compiles it under
`strict` (a type the document gets wrong fails here), and node runs it against the server: an 810
and an INVOIC posted with their own media types, replays, `Prefer: return=minimal`, the
acknowledgements and the invoice list (see client.ts). The packages are pinned in
typescript/package-lock.json and installed by run.sh into target/clients-ts. Prints a closing
`N passed, N failed` line.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request

from harness import ROOT, Checks, edi_inbox, listening_address

PACKAGES = ROOT / "target" / "clients-ts"
SOURCES = ROOT / "tests" / "clients" / "typescript"


def main():
    checks = Checks()
    with tempfile.TemporaryDirectory() as directory:
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info")
        server = edi_inbox(f"sqlite://{directory}/inbox.db", "--bind", "127.0.0.1:0", "serve",
                           stderr=subprocess.PIPE, text=True, env=environment)
        try:
            address = listening_address(server)
            with urllib.request.urlopen(f"http://{address}/openapi.json", timeout=30) as response:
                (PACKAGES / "openapi.json").write_bytes(response.read())
            for name in ["client.ts", "tsconfig.json"]:
                shutil.copy(SOURCES / name, PACKAGES / name)
            binaries = PACKAGES / "node_modules" / ".bin"
            for step in [[binaries / "openapi-typescript", "openapi.json", "-o", "schema.d.ts"],
                         [binaries / "tsc", "-p", "."]]:
                made = subprocess.run(step, cwd=PACKAGES, capture_output=True, text=True)
                checks.check(f"{step[0].name} succeeds", made.returncode == 0, made.stdout + made.stderr)
                if made.returncode != 0:
                    return checks.exit_code()
            ran = subprocess.run(["node", "dist/client.js", address, str(ROOT / "tests" / "fixtures")],
                                 cwd=PACKAGES, capture_output=True, text=True, timeout=120)
            print(ran.stdout, end="", flush=True)
            checks.check("the compiled client's checks all pass", ran.returncode == 0, ran.stderr)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
