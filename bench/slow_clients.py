"""Requests that prove nothing, held open as long as the server lets them: each of COUNT connections
(from ADDRESSES loopback addresses, 127.0.0.2 on; 16 by default) posts an AS2 message without a
credential that declares a 10 MiB body and then sends a byte every few seconds, or, with RATE,
RATE bytes per second in tenths (above the server's minimum rate, never cut as slow); when the
server answers or closes, it waits half a second and starts again. Runs for SECONDS, then prints
one line: how many connections were opened and how the server answered them.

Usage: python3 bench/slow_clients.py HOST:PORT COUNT SECONDS [RATE [ADDRESSES]]
(bench/slow-clients.sh runs it)
"""

import asyncio
import collections
import sys

HEAD = (b"POST /v1/interchanges HTTP/1.1\r\nHost: inbox\r\nAS2-From: ACME AS2\r\nAS2-To: BUYERCO\r\n"
        b"Content-Type: application/edi-x12\r\nContent-Length: 10485760\r\n\r\nISA")


async def attacker(host, port, source, deadline, answers, rate):
    loop = asyncio.get_running_loop()
    while loop.time() < deadline:
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
        except OSError:
            answers["connect-failed"] += 1
            await asyncio.sleep(0.5)
            continue
        answers["opened"] += 1
        try:
            writer.write(HEAD)
            pause, piece = (0.1, b"*" * max(1, int(rate / 10))) if rate else (4, b"*")
            while loop.time() < deadline:
                try:
                    line = await asyncio.wait_for(reader.readline(), timeout=pause)
                except asyncio.TimeoutError:
                    writer.write(piece)
                    await writer.drain()
                    continue
                answers[line.split(b" ")[1].decode() if line.startswith(b"HTTP/") else "closed"] += 1
                break
        except (ConnectionError, OSError):
            answers["reset"] += 1
        finally:
            writer.close()
        await asyncio.sleep(0.5)


async def main():
    address, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0
    addresses = int(sys.argv[5]) if len(sys.argv) > 5 else 16
    host, port = address.rsplit(":", 1)
    deadline = asyncio.get_running_loop().time() + seconds
    answers = collections.Counter()
    await asyncio.gather(*(attacker(host, int(port), f"127.0.0.{2 + n % addresses}", deadline, answers, rate)
                           for n in range(count)))
    print(" ".join(f"{name} {answers[name]}" for name in sorted(answers)))


asyncio.run(main())
