#!/usr/bin/env python3
"""A TCP proxy between the API server and the operator's webhook port, for the reliability
tests: it makes the webhook unreachable on demand while the operator keeps running.

Usage: reliability_proxy.py LISTEN_PORT TARGET_PORT MODE_FILE
The mode is read from MODE_FILE every 0.1 s and acknowledged in MODE_FILE.ack:
  forward    connections are passed to 127.0.0.1:TARGET_PORT
  blackhole  connections are accepted and never answered (the API server waits for its
             timeoutSeconds); connections open when the mode changes are cut
  closed     nothing listens (connection refused); open connections are cut
"""
import os
import select
import socket
import sys
import threading
import time

listen_port, target_port, mode_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
live = set()  # every socket of every open connection, to cut them on a mode change
mode = "forward"
epoch = 0  # mode changes so far: a connection accepted in an older mode is cut


def current(accepted_epoch):
    with lock:
        return accepted_epoch == epoch


def cut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def track(*socks):
    with lock:
        live.update(socks)


def untrack(*socks):
    with lock:
        for sock in socks:
            live.discard(sock)


def pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    untrack(source, sink)
    cut(source)
    cut(sink)


def serve(client, how, accepted_epoch):
    if how == "blackhole":
        track(client)
        if not current(accepted_epoch):
            untrack(client)
            cut(client)
            return
        try:
            while client.recv(65536):
                pass  # read and drop: the handshake never completes
        except OSError:
            pass
        untrack(client)
        cut(client)
        return
    try:
        upstream = socket.create_connection(("127.0.0.1", target_port), timeout=5)
        upstream.settimeout(None)
    except OSError:
        cut(client)
        return
    track(client, upstream)
    if not current(accepted_epoch):
        untrack(client, upstream)
        cut(client)
        cut(upstream)
        return
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()
    pump(client, upstream)


def open_listener():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", listen_port))
    sock.listen(128)
    return sock


listener = open_listener()
next_check = 0.0
while True:
    now = time.monotonic()
    if now >= next_check:
        next_check = now + 0.1
        try:
            wanted = open(mode_file).read().strip() or "forward"
        except OSError:
            wanted = "forward"
        if wanted != mode:
            with lock:
                epoch += 1
                for sock in list(live):
                    cut(sock)
                live.clear()
            if wanted == "closed" and listener is not None:
                listener.close()
                listener = None
            elif wanted != "closed" and listener is None:
                listener = open_listener()
            mode = wanted
            with open(mode_file + ".ack", "w") as ack:
                ack.write(mode)
    if listener is None:
        time.sleep(0.05)
        continue
    readable, _, _ = select.select([listener], [], [], 0.05)
    if readable:
        try:
            client, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=serve, args=(client, mode, epoch), daemon=True).start()
