"""Servers on the network lab's public network (scripts/netlab.py), as a
user's deployment would have them: coturn (UDP and TCP on 3478, TLS on 5349
with a certificate from the lab's own CA), a bootstrap node and an Express
node that hands out TURN credentials and a STUN URL.

They are reached by name: netlab.py gives every namespace a hosts file with
turn.lab.test, stun.lab.test, bootstrap.lab.test and express.lab.test. A
process that must trust the TLS listener takes `Coturn.env()` (SSL_CERT_FILE
naming the lab's CA, which OpenSSL and Python read).
"""
import base64
import hashlib
import hmac
import json
import os
import select
import socket
import subprocess
import time

import netlab

TURN_PORT = 3478
TURNS_PORT = 5349


def rest_credentials(secret, user="lab", ttl=3600):
    """coturn's REST credentials (--use-auth-secret): `<expiry>:<user>` and
    base64(HMAC-SHA1(secret, username))."""
    username = "%d:%s" % (int(time.time()) + ttl, user)
    password = base64.b64encode(hmac.new(secret.encode(), username.encode(), hashlib.sha1).digest()).decode()
    return username, password


BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58_to_hex(text):
    """A key or address as `carrier` prints it (base58), in hex as toxcore takes it."""
    number = 0
    for character in text:
        number = number * 58 + BASE58.index(character)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return ("00" * (len(text) - len(text.lstrip("1")))) + raw.hex().upper()


def control_status(socket_path):
    """A running node's `status` from its control socket (docs/daemon.md)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(10)
    connection.connect(socket_path)
    connection.sendall(b'{"op":"status"}\n')
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    connection.close()
    return json.loads(data)


def read_line(process, seconds, what):
    """The first line a server prints on stdout, within `seconds`."""
    deadline = time.monotonic() + seconds
    buffered = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(process.stdout.fileno(), 4096)
        if not chunk:
            break
        buffered += chunk
        if b"\n" in buffered:
            return buffered.split(b"\n", 1)[0].decode().strip()
    raise netlab.LabError(f"{what} printed nothing within {seconds} s")


class Coturn:
    """coturn on 203.0.113.1 (turn.lab.test): UDP and TCP on 3478, TLS on
    5349, REST secret; relays on 40000-40999."""

    def __init__(self, lab, work, denied_peers=None):
        self.lab = lab
        self.work = work
        self.secret = "lab-%d" % os.getpid()
        self.ca_file = os.path.join(work, "lab-ca.pem")
        self.process = None
        self._certificates()
        self.start(denied_peers)

    def start(self, denied_peers=None):
        """Starts coturn (stopping the one running: every allocation is gone).
        `denied_peers` ("first-last" address ranges) are refused as peers
        with 403, as `denied-peer-ip` does on a hardened server."""
        self.stop()
        log = open(os.path.join(self.work, "coturn.log"), "a")
        denied = [f"--denied-peer-ip={r}" for r in denied_peers or []]
        w = self.work
        self.process = self.lab.start(
            "pub", ["turnserver", "-n", f"--listening-ip={netlab.SERVER_IP}", f"--relay-ip={netlab.SERVER_IP}",
                    f"--listening-port={TURN_PORT}", f"--tls-listening-port={TURNS_PORT}",
                    "--min-port=40000", "--max-port=40999", "--use-auth-secret",
                    f"--static-auth-secret={self.secret}", "--realm=lab.test", "--no-cli", "--no-dtls",
                    f"--cert={w}/turn.pem", f"--pkey={w}/turn.key", "--log-file=stdout", "--simple-log"] + denied,
            stdout=log, stderr=log)
        for port in (TURN_PORT, TURNS_PORT):
            self._wait_for(port)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _certificates(self):
        """A CA of the lab's and a certificate for turn.lab.test (and its address) signed by it."""
        w = self.work

        def openssl(*words):
            netlab.run("openssl", *words)

        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=carrier lab CA", "-keyout", f"{w}/lab-ca.key", "-out", self.ca_file)
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=turn.lab.test",
                "-keyout", f"{w}/turn.key", "-out", f"{w}/turn.csr")
        with open(f"{w}/turn.ext", "w") as handle:
            handle.write(f"subjectAltName=DNS:turn.lab.test,IP:{netlab.SERVER_IP}\n")
        openssl("x509", "-req", "-in", f"{w}/turn.csr", "-CA", self.ca_file, "-CAkey", f"{w}/lab-ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", f"{w}/turn.ext", "-out", f"{w}/turn.pem")

    def _wait_for(self, port):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # bounded poll until coturn listens
            probe = self.lab.sh("pub", "python3", "-c",
                                f"import socket; socket.create_connection(('{netlab.SERVER_IP}', {port}), 0.2)",
                                check=False)
            if probe.returncode == 0:
                return
            time.sleep(0.05)
        raise netlab.LabError(f"coturn did not listen on {port} in the lab")

    def credentials(self, user="lab"):
        return rest_credentials(self.secret, user)

    def env(self):
        """The environment of a process that must trust turns:turn.lab.test."""
        return dict(os.environ, SSL_CERT_FILE=self.ca_file)

    @staticmethod
    def url(kind):
        """`udp`, `tcp` or `tls` as a URL by name."""
        return {"udp": f"turn:turn.lab.test:{TURN_PORT}", "tcp": f"turn:turn.lab.test:{TURN_PORT}?transport=tcp",
                "tls": f"turns:turn.lab.test:{TURNS_PORT}"}[kind]


class BootstrapNode:
    """`carrier node` on 203.0.113.1:33445 (bootstrap.lab.test): the DHT and a TCP relay."""

    PORT = 33445

    def __init__(self, lab, carrier, work):
        self.process = lab.start("pub", [carrier, "node", "--host", netlab.SERVER_IP, "--port", str(self.PORT)],
                                 stdout=subprocess.PIPE, stderr=open(os.path.join(work, "bootstrap.log"), "w"))
        self.entry = read_line(self.process, 20, "the bootstrap node")


class ExpressNode:
    """`carrier express` on 203.0.113.1:8080 (express.lab.test), handing out
    the lab's TURN server (UDP and TCP) and its STUN URL."""

    PORT = 8080

    def __init__(self, lab, carrier, work, coturn):
        secret_file = os.path.join(work, "turn.secret")
        with open(secret_file, "w") as handle:
            handle.write(coturn.secret + "\n")
        self.process = lab.start(
            "pub", [carrier, "express", "--host", netlab.SERVER_IP, "--port", str(self.PORT), "--turn-secret",
                    secret_file, "--turn-url", Coturn.url("udp"), "--turn-url", Coturn.url("tcp"), "--stun-url",
                    f"stun:stun.lab.test:{TURN_PORT}"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "express.log"), "w"))
        self.entry = read_line(self.process, 20, "the Express node")
