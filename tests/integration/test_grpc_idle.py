#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Idle connections against the gRPC port (docs/internals/rpc.md, "Idle
connections and EMFILE").  gRPC core 1.51 stops accepting for good once
accept4 fails with EMFILE, and holds a connection that never sends the
HTTP/2 preface for 120 s, so idle sockets up to the descriptor limit used to
kill the port.  The server is started with a lowered RLIMIT_NOFILE:

- soft 128, hard 4096: serve raises the soft limit to the hard one, so 1000
  idle sockets leave the port answering (it died at about 120 before);
- every idle socket is closed by the server after the handshake timeout
  (10 s; 120 s before);
- soft = hard = 128: the port stops answering at the limit, but comes back
  once the idle sockets are gone: gangbridge accepts plain-text connections
  itself and backs off on EMFILE (gb_rpc_accept), where gRPC core 1.51's
  own listener stopped for good (a TLS port still has the core's listener,
  and the listener self-check is what notices it dying);
- with --http-addr, `serve --offline` runs the self-check too: /livez lists
  "grpc-listener", which fails once the port stops accepting, instead of
  staying green for ever (issue 19, finding 6: offline registered no check).

`--binary PATH` runs the same against another build (for before/after
figures) and only prints."""

import os
import resource
import socket
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_helpers as H  # noqa: E402
from controller_helpers import free_port  # noqa: E402
import grpc  # noqa: E402


def limit(soft, hard):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def fresh_check(stubs, addr, timeout=2):
    """Health/Check on a connection of its own (it must pass accept)."""
    ch = grpc.insecure_channel(addr, options=[("grpc.use_local_subchannel_pool", 1)])
    m = H.methods(ch, stubs)
    code, _ = H.code_of(lambda: m["check"](stubs.health.HealthCheckRequest(), timeout=timeout))
    ch.close()
    return code


def open_idle(srv, stubs, n, every=25):
    """Opens up to n idle sockets, checking the port every `every`; returns
    (sockets open when the port stopped answering or None, the sockets)."""
    socks = []
    for i in range(n):
        try:
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=2))
        except OSError:
            return len(socks), socks
        if (i + 1) % every == 0 and fresh_check(stubs, srv.addr) != "OK":
            return len(socks), socks
    return None, socks


def close_all(socks):
    for s in socks:
        s.close()


def all_closed_by_server(socks, timeout):
    """Seconds until the server closed every socket, or None."""
    t0 = time.time()
    pending = list(socks)
    for s in pending:
        s.settimeout(0.05)
    while pending and time.time() - t0 < timeout:
        left = []
        for s in pending:
            try:
                if s.recv(64) == b"":
                    continue
            except socket.timeout:
                left.append(s)
                continue
            except OSError:
                continue
            left.append(s)
        pending = left
    return None if pending else time.time() - t0


def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def main():
    binary = None
    if len(sys.argv) == 3 and sys.argv[1] == "--binary":
        binary = sys.argv[2]
    r = H.Report()
    with H.tmpdir() as tmp:
        stubs = H.Stubs(tmp)

        srv = H.Server(binary=binary, preexec_fn=limit(128, 4096))
        died, socks = open_idle(srv, stubs, 1000)
        print("soft 128 / hard 4096: port %s" % (
            "died after %d idle sockets" % died if died else "answers with 1000 idle sockets"))
        r.check("soft limit raised: 1000 idle sockets leave the port answering",
                binary or died is None, died)
        close_all(socks)
        srv.stop()

        srv = H.Server(binary=binary, preexec_fn=limit(4096, 4096))
        socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(20)]
        secs = all_closed_by_server(socks, 20)
        print("idle sockets closed by the server after: %s" %
              ("%.1f s" % secs if secs is not None else "more than 20 s"))
        r.check("idle sockets are closed after the handshake timeout",
                binary or (secs is not None and 5 < secs < 20), secs)
        close_all(socks)
        r.check("port answers after idle sockets were cut",
                fresh_check(stubs, srv.addr) == "OK")
        srv.stop()

        srv = H.Server(binary=binary, preexec_fn=limit(128, 128))
        died, socks = open_idle(srv, stubs, 400, every=5)
        close_all(socks)
        time.sleep(0.5)
        after = fresh_check(stubs, srv.addr)
        deadline = time.time() + 10
        while after != "OK" and time.time() < deadline:
            time.sleep(0.2)
            after = fresh_check(stubs, srv.addr)
        print("soft = hard = 128: port stopped answering after %s idle sockets; after closing "
              "them: %s" % (died, after))
        r.check("at the hard limit the port comes back once descriptors are free",
                binary or after == "OK", (died, after))
        srv.stop()

        # Offline with probes: the grpc-listener check is registered (it was not: /livez stayed
        # green for ever over a dead port), and it is what turns /livez red.
        hport = free_port()
        srv = H.Server("--http-addr", "127.0.0.1:%d" % hport, binary=binary)
        deadline = time.time() + 20
        code, body = get(hport, "/livez?verbose")
        while code == 0 and time.time() < deadline:
            time.sleep(0.1)
            code, body = get(hport, "/livez?verbose")
        print("offline /livez?verbose: %s %s" % (code, body.strip().replace("\n", "; ")))
        r.check("offline: /livez runs the grpc-listener check",
                binary or (code == 200 and "[+]grpc-listener ok" in body), body)
        srv.stop()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
