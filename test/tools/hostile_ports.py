#!/usr/bin/env python3
"""Hostile clients of vscaler's plain ports and its webhook's memory, for
test/e2e/ports_hostile_test.sh (issue 29, DESIGN "Who may talk to vscaler").

  hostile_ports.py probe PROBE_URL PORT... -- hold IDLE idle and SLOW byte-a-second
      connections spread over PORTs (127.0.0.1), reopening each one the server closes (an
      attacker does), while PROBE_URL is fetched 10 times a second on a new connection each time
      (as the kubelet probes); prints the latencies and exits 1 if one answer took longer than
      --limit-ms or was not 200.
  hostile_ports.py bodies WEBHOOK_PORT PID -- COUNT concurrent TLS POSTs of BODY_MIB MiB to the
      webhook; prints how many were answered with which status and the process' peak RSS
      (VmHWM) before and after; exits 1 when the peak passes --max-rss-mib.
  hostile_ports.py heads WEBHOOK_PORT PID -- COUNT TLS connections to the webhook (100
      handshakes at a time), each sending HEAD_KIB KiB of a request head never finished and
      holding it for up to --hold s; prints how they ended and the peak RSS as `bodies` does.

The probe connects from 127.0.0.2, the flood from 127.0.0.1: in a cluster the kubelet probes from
the node's address and an attacker from its pod's, and the per-address cap is what keeps one
client from taking every descriptor.
"""
import argparse
import asyncio
import resource
import selectors
import socket
import ssl
import statistics
import sys
import threading
import time


def open_nonblocking(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return sock


class Flood:
    """Idle and slow connections, each reopened when the server closes it."""

    def __init__(self, ports, idle, slow):
        self.ports = ports
        self.selector = selectors.DefaultSelector()
        self.slow = []  # [socket, bytes sent]
        self.reopened = 0
        self.stop = threading.Event()
        for i in range(idle):
            self._add(self.ports[i % len(self.ports)], slow=False)
        for i in range(slow):
            self._add(self.ports[i % len(self.ports)], slow=True)

    def _add(self, port, slow):
        sock = open_nonblocking(port)
        entry = [sock, 0, port, slow]
        self.selector.register(sock, selectors.EVENT_READ, entry)
        if slow:
            self.slow.append(entry)

    def _reopen(self, entry):
        sock, _, port, slow = entry
        self.selector.unregister(sock)
        sock.close()
        if slow:
            self.slow.remove(entry)
        self.reopened += 1
        self._add(port, slow)

    def run(self):
        request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
        next_byte = time.monotonic()
        while not self.stop.is_set():
            for key, _ in self.selector.select(timeout=0.05):
                entry = key.data
                try:
                    data = entry[0].recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # closed by the server (a deadline): come back at once
                    self._reopen(entry)
            if time.monotonic() >= next_byte:
                next_byte += 1.0
                for entry in list(self.slow):
                    try:
                        entry[0].send(request[entry[1] : entry[1] + 1])
                        entry[1] = (entry[1] + 1) % len(request)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        self._reopen(entry)

    def open_count(self):
        return len(self.selector.get_map())


def probe_once(host, port, path):
    start = time.monotonic()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(5)
    try:
        sock.bind(("127.0.0.2", 0))
        sock.connect((host, port))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    except OSError as error:
        return time.monotonic() - start, f"error {error}"
    finally:
        sock.close()
    status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.1 ") else "garbled"
    return time.monotonic() - start, status


def cmd_probe(args):
    resource.setrlimit(resource.RLIMIT_NOFILE, (args.idle + args.slow + 256,) * 2)
    url = args.probe_url.removeprefix("http://")
    hostport, _, path = url.partition("/")
    host, _, port = hostport.partition(":")
    flood = Flood(args.ports, args.idle, args.slow)
    thread = threading.Thread(target=flood.run, daemon=True)
    thread.start()
    time.sleep(args.settle)  # connections established, the slow ones a few bytes in
    held = flood.open_count()
    latencies, bad = [], []
    next_probe = time.monotonic()
    for _ in range(int(args.seconds * 10)):
        next_probe += 0.1
        took, status = probe_once(host, int(port), "/" + path)
        latencies.append(took * 1000)
        if status != "200":
            bad.append(status)
        time.sleep(max(0.0, next_probe - time.monotonic()))
    flood.stop.set()
    thread.join()
    latencies.sort()
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(
        f"probes: {len(latencies)} while {held} hostile connections were held "
        f"({args.idle} idle, {args.slow} byte-a-second; {flood.reopened} reopened after the "
        f"server closed them): p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms"
    )
    if bad:
        print(f"FAIL: {len(bad)} probes were not 200: {bad[:5]}")
        return 1
    if latencies[-1] > args.limit_ms:
        print(f"FAIL: a probe took {latencies[-1]:.1f} ms (limit {args.limit_ms} ms)")
        return 1
    return 0


def peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def post_body(port, mib, results, lock):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    status = "error"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as sock:
                length = mib * 1024 * 1024
                sock.sendall(
                    f"POST /mutate-deployments HTTP/1.1\r\nHost: x\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode()
                )
                chunk = b"[" * 65536
                sent = 0
                try:
                    while sent < length:
                        sock.sendall(chunk)
                        sent += len(chunk)
                except OSError:
                    pass  # refused before the body was read: the answer is already there
                answer = sock.recv(4096)
                if answer.startswith(b"HTTP/1.1 "):
                    status = answer.split(b" ", 2)[1].decode()
    except OSError as error:
        status = f"error:{type(error).__name__}"
    with lock:
        results[status] = results.get(status, 0) + 1


def cmd_bodies(args):
    before = peak_rss_mib(args.pid)
    results, lock = {}, threading.Lock()
    threads = [
        threading.Thread(target=post_body, args=(args.port, args.body_mib, results, lock))
        for _ in range(args.count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return report_peak(
        args, f"{args.count} concurrent {args.body_mib} MiB POSTs: answers", results, before)


def report_peak(args, what, results, before):
    """Prints how the clients ended and the peak RSS before and after; 1 when past the limit."""
    after = peak_rss_mib(args.pid)
    print(f"{what} {dict(sorted(results.items()))}; "
          f"peak RSS {before:.0f} MiB before, {after:.0f} MiB after")
    if after > args.max_rss_mib:
        print(f"FAIL: peak RSS {after:.0f} MiB > {args.max_rss_mib} MiB")
        return 1
    return 0


async def hold_heads(port, count, head_kib, hold_seconds, results):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    head = b"POST /mutate-deployments HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * (head_kib * 1024)
    handshakes = asyncio.Semaphore(100)

    async def one():
        status = "held"
        try:
            async with handshakes:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, ssl=context), timeout=10)
            writer.write(head)  # never finished: no blank line
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), timeout=hold_seconds)
            status = line.split(b" ", 2)[1].decode() if line.startswith(b"HTTP/1.1 ") else "closed"
            writer.close()
        except asyncio.TimeoutError:
            pass  # still held when the test ends
        except (OSError, ssl.SSLError) as error:
            status = f"error:{type(error).__name__}"
        results[status] = results.get(status, 0) + 1

    await asyncio.gather(*(one() for _ in range(count)))


def cmd_heads(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    before = peak_rss_mib(args.pid)
    results = {}
    asyncio.run(hold_heads(args.port, args.count, args.head_kib, args.hold, results))
    return report_peak(
        args, f"{args.count} connections each sending a {args.head_kib} KiB head never finished:",
        results, before)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe")
    probe.add_argument("probe_url")
    probe.add_argument("ports", type=int, nargs="+")
    probe.add_argument("--idle", type=int, default=2000)
    probe.add_argument("--slow", type=int, default=200)
    probe.add_argument("--seconds", type=float, default=10)
    probe.add_argument("--settle", type=float, default=2)
    probe.add_argument("--limit-ms", type=float, default=100)
    memory = {}  # the webhook's memory bounds: the same arguments, then each one's own
    for name, count in (("bodies", 100), ("heads", 3000)):
        memory[name] = sub.add_parser(name)
        memory[name].add_argument("port", type=int)
        memory[name].add_argument("pid", type=int)
        memory[name].add_argument("--count", type=int, default=count)
        memory[name].add_argument("--max-rss-mib", type=float, default=128)
    memory["bodies"].add_argument("--body-mib", type=int, default=7)
    memory["heads"].add_argument("--head-kib", type=int, default=60)
    memory["heads"].add_argument("--hold", type=float, default=5)
    args = parser.parse_args()
    commands = {"probe": cmd_probe, "bodies": cmd_bodies, "heads": cmd_heads}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
