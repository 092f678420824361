#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""TLS and mutual TLS on `gangbridge serve`: throwaway certificates are made
with the openssl CLI at test time (nothing is committed).  A TLS server
accepts clients that trust its CA and refuses plaintext and clients that do
not; an mTLS server (--grpc-client-ca) also refuses clients without a
certificate or with one from another CA.  Both python3-grpcio and the C
client (`gangbridge call health --tls-*`) are checked."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc_helpers as H  # noqa: E402
import grpc  # noqa: E402


def check_call(stubs, addr, creds):
    """Health/Check over a channel: creds None means plaintext."""
    if creds is None:
        ch = grpc.insecure_channel(addr)
    else:
        ch = grpc.secure_channel(addr, creds,
                                 options=[("grpc.ssl_target_name_override", "localhost")])
    m = H.methods(ch, stubs)
    code, res = H.code_of(lambda: m["check"](stubs.health.HealthCheckRequest(), timeout=5))
    ch.close()
    return code


def c_client(addr, *tls):
    p = subprocess.run([H.GANGBRIDGE, "call", "health", "--addr", addr, "--timeout", "5", *tls],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode().strip(), p.stderr.decode()


def main():
    r = H.Report()
    with H.tmpdir() as tmp:
        stubs = H.Stubs(tmp)
        certs = os.path.join(tmp, "certs")
        os.makedirs(certs)
        c = H.make_certs(certs)
        ca, rogue_ca = H.read(c["ca.pem"]), H.read(c["rogue-ca.pem"])
        client = (H.read(c["client.key"]), H.read(c["client.pem"]))
        rogue = (H.read(c["rogue.key"]), H.read(c["rogue.pem"]))

        # ---- TLS
        srv = H.Server("--grpc-tls-cert", c["server.pem"], "--grpc-tls-key", c["server.key"])
        r.check("tls: server says TLS", "(TLS)" in srv.stderr(), srv.stderr())
        code = check_call(stubs, srv.addr, grpc.ssl_channel_credentials(root_certificates=ca))
        r.check("tls: client trusting the CA is accepted", code == "OK", code)
        code = check_call(stubs, srv.addr, None)
        r.check("tls: plaintext client is refused", code == "UNAVAILABLE", code)
        code = check_call(stubs, srv.addr,
                          grpc.ssl_channel_credentials(root_certificates=rogue_ca))
        r.check("tls: client trusting another CA is refused", code == "UNAVAILABLE", code)
        rc, out, err = c_client(srv.addr, "--tls-ca", c["ca.pem"], "--tls-server-name",
                                "localhost")
        r.check("tls: gangbridge call with --tls-ca", rc == 0 and out == "SERVING", (rc, err))
        rc, out, err = c_client(srv.addr)
        r.check("tls: gangbridge call in plaintext fails", rc == 1 and "UNAVAILABLE" in err,
                (rc, err))
        r.check("tls: stops cleanly", srv.stop() == 0, srv.stderr())

        # ---- mutual TLS
        srv = H.Server("--grpc-tls-cert", c["server.pem"], "--grpc-tls-key", c["server.key"],
                       "--grpc-client-ca", c["ca.pem"])
        r.check("mtls: server says mutual TLS", "(mutual TLS)" in srv.stderr(), srv.stderr())
        code = check_call(stubs, srv.addr, grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=client[0], certificate_chain=client[1]))
        r.check("mtls: client with a CA-signed certificate is accepted", code == "OK", code)
        code = check_call(stubs, srv.addr, grpc.ssl_channel_credentials(root_certificates=ca))
        r.check("mtls: client without a certificate is refused", code == "UNAVAILABLE", code)
        code = check_call(stubs, srv.addr, grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=rogue[0], certificate_chain=rogue[1]))
        r.check("mtls: client with another CA's certificate is refused", code == "UNAVAILABLE",
                code)
        code = check_call(stubs, srv.addr, None)
        r.check("mtls: plaintext client is refused", code == "UNAVAILABLE", code)
        rc, out, err = c_client(srv.addr, "--tls-ca", c["ca.pem"], "--tls-cert", c["client.pem"],
                                "--tls-key", c["client.key"], "--tls-server-name", "localhost")
        r.check("mtls: gangbridge call with a client certificate", rc == 0 and out == "SERVING",
                (rc, err))
        rc, out, err = c_client(srv.addr, "--tls-ca", c["ca.pem"], "--tls-server-name",
                                "localhost")
        r.check("mtls: gangbridge call without a client certificate fails",
                rc == 1 and "UNAVAILABLE" in err, (rc, err))
        r.check("mtls: stops cleanly", srv.stop() == 0, srv.stderr())

        # ---- bad TLS configuration is a clear startup error
        p = subprocess.run([H.GANGBRIDGE, "serve", "--offline", "--grpc-addr", "127.0.0.1:0",
                            "--grpc-tls-cert", c["server.pem"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        # serve has one flag parser for both modes: the config check refuses the pair, with
        # status 1 as the controller mode always did.
        r.check("cert without key: input error naming the flag", p.returncode == 1 and
                b"--grpc-tls-key" in p.stderr, (p.returncode, p.stderr))
        p = subprocess.run([H.GANGBRIDGE, "serve", "--offline", "--grpc-addr", "127.0.0.1:0",
                            "--grpc-tls-cert", os.path.join(tmp, "missing.pem"),
                            "--grpc-tls-key", c["server.key"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        r.check("missing cert file: exit 1 naming it", p.returncode == 1 and b"missing.pem"
                in p.stderr, (p.returncode, p.stderr))
        # A key that is not the certificate's: said so, naming both files, and
        # not reported as "address in use".
        p = subprocess.run([H.GANGBRIDGE, "serve", "--offline", "--grpc-addr", "127.0.0.1:0",
                            "--grpc-tls-cert", c["server.pem"],
                            "--grpc-tls-key", c["client.key"]],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        err = p.stderr.decode()
        r.check("mismatched key: exit 1 naming both files, not 'address in use'",
                p.returncode == 1 and "does not match" in err and "server.pem" in err
                and "client.key" in err and "in use" not in err, (p.returncode, err))
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
