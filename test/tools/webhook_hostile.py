#!/usr/bin/env python3
"""A hostile client of vscaler's webhook port, for test/e2e/webhook_hostile_test.sh: from one
loopback source address it holds IDLE idle TLS connections (reopened when the server closes
them) and SLOW requests that send one byte a second (reopened when the server cuts them), for
SECONDS, then stops by itself. Bounded: at most IDLE + SLOW connections at any time, 100
handshakes in flight, loopback only.

Usage: webhook_hostile.py PORT SOURCE IDLE SLOW SECONDS READY_FILE
Writes READY_FILE once every idle connection and half the slow ones were opened (or the ramp-up
took 60 s: on a loaded machine this client itself is the slow part), prints
progress lines "webhook_hostile held_idle=N slow=N opened=N refused=N cut=N" on stdout."""
import asyncio
import resource
import ssl
import sys
import time

port, source = int(sys.argv[1]), sys.argv[2]
idle_count, slow_count, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
ready_file = sys.argv[6]
# Descriptors: one per connection and some.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE  # hostile clients do not care who answers
stats = {"held_idle": 0, "slow": 0, "opened": 0, "refused": 0, "cut": 0}
end = time.monotonic() + seconds
handshakes = None  # a semaphore, made inside the loop


async def connect():
    async with handshakes:
        return await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=context, local_addr=(source, 0)),
            timeout=10)


async def idle_connection():
    while time.monotonic() < end:
        try:
            reader, writer = await connect()
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            stats["refused"] += 1
            await asyncio.sleep(0.5)
            continue
        stats["opened"] += 1
        stats["held_idle"] += 1
        try:
            await asyncio.wait_for(reader.read(1), timeout=max(0.1, end - time.monotonic()))
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            pass
        stats["held_idle"] -= 1
        writer.close()


async def slow_request():
    request = (b"POST /mutate-deployments HTTP/1.1\r\nHost: vscaler\r\n"
               b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + b" " * 100000)
    while time.monotonic() < end:
        try:
            reader, writer = await connect()
        except (OSError, asyncio.TimeoutError, ssl.SSLError):
            stats["refused"] += 1
            await asyncio.sleep(0.5)
            continue
        stats["opened"] += 1
        stats["slow"] += 1
        try:
            for byte in request:
                if time.monotonic() >= end:
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                if reader.at_eof():
                    break
                await asyncio.sleep(1)
            else:
                pass
        except (OSError, ssl.SSLError):
            pass
        if time.monotonic() < end:
            stats["cut"] += 1
        stats["slow"] -= 1
        writer.close()


async def progress():
    ready = False
    started = time.monotonic()
    while time.monotonic() < end:
        await asyncio.sleep(1)
        held = stats["held_idle"] >= idle_count and stats["slow"] >= slow_count // 2
        if not ready and (held or time.monotonic() - started > 60):
            ready = True
            open(ready_file, "w").write("ready\n")
        print("webhook_hostile " + " ".join("%s=%d" % kv for kv in stats.items()), flush=True)


async def main():
    global handshakes
    handshakes = asyncio.Semaphore(100)
    tasks = [asyncio.create_task(idle_connection()) for _ in range(idle_count)]
    tasks += [asyncio.create_task(slow_request()) for _ in range(slow_count)]
    tasks.append(asyncio.create_task(progress()))
    await asyncio.wait(tasks, timeout=seconds + 15)


asyncio.run(main())
