# SPDX-License-Identifier: Apache-2.0
"""Helpers for the gRPC integration tests: Python stubs generated at test
time with `protoc --python_out` (no grpc_tools), a `gangbridge serve`
process on a free port, throwaway certificates made with the openssl CLI,
and a tiny check/report harness that prints 'N passed, N failed'."""

import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

SRC = os.environ.get("GB_SRC") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GB_BUILD") or os.path.join(SRC, "build")
GANGBRIDGE = os.environ.get("GANGBRIDGE") or os.path.join(BUILD, "gangbridge")

import grpc  # noqa: E402  (Debian python3-grpcio)


class Stubs:
    """Generated message modules: calc (calculator_pb2), place
    (placement_pb2) and health (health_pb2)."""

    def __init__(self, tmp):
        out = os.path.join(tmp, "pygen")
        os.makedirs(out)
        proto = os.path.join(SRC, "proto")
        subprocess.run(
            ["protoc", "-I" + proto, "--python_out=" + out,
             "gangbridge/v1/calculator.proto", "gangbridge/v1/placement.proto",
             "grpc/health/v1/health.proto"],
            check=True)
        sys.path.insert(0, out)
        from gangbridge.v1 import calculator_pb2, placement_pb2  # noqa: E402
        self.calc = calculator_pb2
        self.place = placement_pb2
        # pygen/grpc/... would shadow the grpc package: load it by path.
        spec = importlib.util.spec_from_file_location(
            "gb_health_pb2", os.path.join(out, "grpc", "health", "v1", "health_pb2.py"))
        self.health = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.health)


def methods(ch, stubs):
    """Callables for every method on channel ch."""
    c, p, h = stubs.calc, stubs.place, stubs.health

    def uu(path, req, resp):
        return ch.unary_unary(path, request_serializer=req.SerializeToString,
                              response_deserializer=resp.FromString)
    return {
        "calculate": uu("/gangbridge.v1.GangCalculator/Calculate", c.CalculateRequest,
                        c.CalculateResponse),
        "evaluate": uu("/gangbridge.v1.PlacementEvaluator/Evaluate", p.EvaluateRequest,
                       p.EvaluateResponse),
        "replace": uu("/gangbridge.v1.PlacementEvaluator/ReplaceSnapshot",
                      p.ReplaceSnapshotRequest, p.SnapshotStatus),
        "update": uu("/gangbridge.v1.PlacementEvaluator/UpdateNodes", p.UpdateNodesRequest,
                     p.SnapshotStatus),
        "status": uu("/gangbridge.v1.PlacementEvaluator/GetSnapshotStatus",
                     p.GetSnapshotStatusRequest, p.SnapshotStatus),
        "check": uu("/grpc.health.v1.Health/Check", h.HealthCheckRequest,
                    h.HealthCheckResponse),
        "watch": ch.unary_stream("/grpc.health.v1.Health/Watch",
                                 request_serializer=h.HealthCheckRequest.SerializeToString,
                                 response_deserializer=h.HealthCheckResponse.FromString),
        "raw": lambda path: ch.unary_unary(path),
    }


def code_of(fn):
    """Runs fn; returns ('OK', result) or (status code name, details)."""
    try:
        return "OK", fn()
    except grpc.RpcError as e:
        return e.code().name, e.details()


class Server:
    """`gangbridge serve --offline` on 127.0.0.1:0; .port once started."""

    def __init__(self, *args, binary=None, preexec_fn=None):
        self.proc = subprocess.Popen(
            [binary or GANGBRIDGE, "serve", "--offline", "--grpc-addr", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=preexec_fn)
        self.lines = []
        self.port = None
        started = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                self.lines.append(line)
                m = re.search(r"listening on \S+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    started.set()
            started.set()
        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        if not started.wait(60) or self.port is None:
            self.stop()
            raise RuntimeError("server did not start:\n" + "\n".join(self.lines))
        self.addr = "127.0.0.1:%d" % self.port

    def stop(self, timeout=60):
        """SIGTERM, wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(5)
        return rc

    def stderr(self):
        return "\n".join(self.lines)


def make_certs(d):
    """A CA, a server certificate for localhost/127.0.0.1, a client
    certificate signed by the CA, and a rogue client signed by another CA."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for ca in ("ca", "rogue-ca"):
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2",
            "-subj", "/CN=gangbridge test " + ca)
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    for name, ca, ext in (("server", "ca", "server.ext"), ("client", "ca", "client.ext"),
                          ("rogue", "rogue-ca", "client.ext")):
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        run("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", ext)
    return {k: os.path.join(d, k) for k in os.listdir(d)}


def read(path):
    with open(path, "rb") as f:
        return f.read()


class Report:
    """Collects named checks and prints one line each plus a summary."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   %s" % name)
        else:
            self.failed += 1
            print("FAIL %s %s" % (name, str(detail)[:2000]))
        sys.stdout.flush()
        return ok

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed or not self.passed else 0


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="gb-grpc-")


def wait_until(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()
