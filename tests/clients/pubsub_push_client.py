"""Pub/Sub push authentication as Google does it: OIDC tokens made by Google's own library
(PyPI `google-auth`, `google.auth.jwt.encode` with an RSA signer), keys published as a JWKS on a
loopback server (made by PyJWT), and google-auth's `id_token.verify_token` as the independent
verifier that the token and keys are what Google's clients accept. Then the real edi-inbox binary,
with partner authentication and no API key, books the push of a partner whose subscription signs as
its service account, and refuses (401, nothing stored) an expired token, another audience or issuer,
an unknown key, `alg: none`, an unverified e-mail and a service account that is no partner's; tokens
naming made-up keys do not make it fetch the keys again.

Run by scripts/test through run.sh. Prints a closing `N passed, N failed` line.
"""

import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import google.auth.transport.requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import crypt, jwt
from google.oauth2 import id_token
from jwt.algorithms import RSAAlgorithm

from harness import SAMPLE, Checks, edi_inbox, listening_address, post, stored_interchanges

AUDIENCE = "https://inbox.example.com/v1/interchanges"
ACCOUNT = "edi-push@acme-project.iam.gserviceaccount.com"
ADMIN_TOKEN = "admin-token-for-the-pubsub-check"


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def signer(key, kid):
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return crypt.RSASigner.from_string(pem, kid)


def jwks(key, kid):
    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {"keys": [dict(jwk, kid=kid, alg="RS256", use="sig")]}


def claims(**changes):
    now = int(time.time())
    payload = {
        "iss": "https://accounts.google.com",
        "aud": AUDIENCE,
        "sub": "112233445566778899000",
        "email": ACCOUNT,
        "email_verified": True,
        "iat": now,
        "exp": now + 3600,
    }
    payload.update(changes)
    return payload


def token(key, kid, **changes):
    return jwt.encode(signer(key, kid), claims(**changes)).decode()


def unsigned_token():
    part = lambda value: base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none', 'kid': 'key-1', 'typ': 'JWT'})}.{part(claims())}."


def push(control):
    interchange = SAMPLE.replace(b"000001142", control.encode())
    return json.dumps({
        "message": {"data": base64.b64encode(interchange).decode(), "messageId": f"m-{control}", "publishTime": "2026-12-04T00:00:00Z"},
        "subscription": "projects/acme-project/subscriptions/edi-push",
    }).encode()


def serve_keys(document):
    class Keys(http.server.BaseHTTPRequestHandler):
        served = 0

        def do_GET(self):
            Keys.served += 1
            body = json.dumps(document).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    server.handler = Keys
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/oauth2/v3/certs"


def main():
    checks = Checks()
    check = checks.check
    key, stranger = new_key(), new_key()
    keys, certs_url = serve_keys(jwks(key, "key-1"))
    valid = token(key, "key-1")
    verified = id_token.verify_token(valid, google.auth.transport.requests.Request(), audience=AUDIENCE, certs_url=certs_url)
    check("google-auth verifies the token against the served keys", verified["email"] == ACCOUNT, verified)
    assert SAMPLE.count(b"000001142") == 2, "the sample's ISA13 and IEA02"
    with tempfile.TemporaryDirectory() as directory:
        database = f"sqlite://{directory}/inbox.db"
        edi_inbox(database, "partner", "add", "acme", "--name", "ACME", "--sender", "x12:ZZ:ACMESUPPLY", "--pubsub-account", ACCOUNT)
        environment = dict(os.environ, EDI_INBOX_LOG_FORMAT="json", RUST_LOG="info")
        server = edi_inbox(
            database, "--bind", "127.0.0.1:0", "--auth", "partners", "--admin-token", ADMIN_TOKEN,
            "--pubsub-audience", AUDIENCE, "--pubsub-jwks", certs_url, "serve",
            stderr=subprocess.PIPE, text=True, env=environment,
        )
        try:
            address = listening_address(server)
            url = f"http://{address}/v1/interchanges"

            def send(bearer, control):
                headers = {"content-type": "application/json", "authorization": f"Bearer {bearer}"}
                return post(url, push(control), headers)

            status, body = send(valid, "000000501")
            check("a Google-signed push of the partner's subscription books: 201", status == 201, (status, body))
            status, body = send(token(key, "key-1"), "000000501")
            check("the same push again: 200 replay", status == 200, (status, body))
            refused = {
                "an expired token": token(key, "key-1", iat=int(time.time()) - 7200, exp=int(time.time()) - 3600),
                "another audience": token(key, "key-1", aud="https://elsewhere.example.com/push"),
                "another issuer": token(key, "key-1", iss="https://evil.example.com"),
                "an unknown key": token(stranger, "key-2"),
                "a known key id signed by another key": token(stranger, "key-1"),
                "alg none": unsigned_token(),
                "an unverified e-mail": token(key, "key-1", email_verified=False),
                "a service account of no partner": token(key, "key-1", email="someone@other.iam.gserviceaccount.com"),
            }
            for n, (name, bad) in enumerate(refused.items()):
                status, body = send(bad, f"00000060{n}")
                check(f"{name}: 401", status == 401 and body["type"] == "/problems/unauthorized", (status, body))
            fetched = keys.handler.served
            for n in range(20):
                send(token(stranger, f"made-up-{n}"), "000000700")
            check(
                "tokens naming made-up keys make the server fetch no keys (at most once a minute)",
                keys.handler.served == fetched,
                (fetched, keys.handler.served),
            )
            stored = stored_interchanges(url, ADMIN_TOKEN)
            check("nothing refused was stored", len(stored) == 1, stored)
        finally:
            server.terminate()
            server.wait(timeout=30)
            keys.shutdown()
    return checks.exit_code()


if __name__ == "__main__":
    sys.exit(main())
