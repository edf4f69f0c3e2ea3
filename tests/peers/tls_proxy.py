"""A TLS-terminating TCP proxy for the tests: accepts TLS on 127.0.0.1:PORT with CERT and KEY and
relays the plaintext to 127.0.0.1:UPSTREAM, as a load balancer in front of a broker does; prints
"ready" once it listens.

  tls_proxy.py CERT KEY PORT UPSTREAM
"""

import asyncio
import ssl
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


async def main(cert, key, port, upstream):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def relay(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", int(upstream))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    server = await asyncio.start_server(relay, "127.0.0.1", int(port), ssl=context)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
