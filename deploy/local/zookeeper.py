"""Runs a standalone ZooKeeper server from Debian's ``zookeeper`` package.

The server is a child process (``java ... QuorumPeerMain zoo.cfg``) with its configuration,
data and log in one directory, bound to a loopback address. It is started and stopped by the
test fixtures, the benchmarks and the local cluster; nothing here needs the system service.

**TLS.** Given :class:`ZooKeeperTls`, the server also serves TLS on ``secureClientPort`` through
ZooKeeper's ``NettyServerCnxnFactory``, with PEM stores (``ssl.keyStore.type=PEM``, ZooKeeper
3.8), client certificates required and checked against the truststore, and the x509
authentication provider, so that a client's certificate subject is its identity in znode ACLs
(``x509:CN=...``). Debian's ``zookeeper.jar`` names only part of Netty in its manifest's
Class-Path: without ``netty-codec.jar`` every TLS connection fails at its first byte
(``NoClassDefFoundError: io/netty/handler/codec/ByteToMessageDecoder`` in zookeeper.out), so
the class path here adds Netty's codec and resolver jars (Debian's ``libnetty-java``, a
dependency of the ``zookeeper`` package).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from odradek.clock import Clock, SystemClock

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")  # log4j.properties of the package
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
NETTY_JARS = (Path("/usr/share/java/netty-codec.jar"), Path("/usr/share/java/netty-resolver.jar"))
"""Netty jars ``NettyServerCnxnFactory`` (TLS) needs beyond zookeeper.jar's Class-Path."""


class ZooKeeperNotInstalledError(RuntimeError):
    """Debian's ``zookeeper`` package (or Java) is missing: run ``bash scripts/setup.sh``."""


_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_handed_out: set[int] = set()


def _ports_outside_ephemeral_range() -> range:
    """The ports the kernel never gives an outgoing connection (or a bind to port 0): those
    below ``ip_local_port_range`` (or, when that range starts low, those above it)."""
    low, high = (int(part) for part in _EPHEMERAL_RANGE.read_text().split())
    if low - 10_000 >= 4_096:
        return range(10_000, low)
    if 65_535 - high >= 4_096:
        return range(high + 1, 65_536)
    raise RuntimeError(f"ip_local_port_range {low}-{high} leaves no room for fixed listening ports")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now, outside the kernel's ephemeral range.

    A port the kernel handed out for ``bind(0)`` lies in the ephemeral range, which every
    outgoing connection draws its local port from: between this call and the server's bind a
    client connection can take it (a CI run's node died with "address already in use" on such
    a port). Ports below the range are never taken that way; this process never hands out the
    same one twice, and one another process is listening on (or has in TIME_WAIT) is passed
    over."""
    ports = _ports_outside_ephemeral_range()
    rng = random.SystemRandom()
    for _ in range(1_000):
        port = rng.choice(ports)
        if port in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free port on {host} in {ports.start}-{ports.stop - 1}")


def _listening(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` (a bind with SO_REUSEADDR fails only then,
    not for the TIME_WAIT connections a server stopped on that port leaves)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
        return False


def four_letter_word(host: str, port: int, word: str, timeout_s: float = 1.0) -> str:
    """Sends one of ZooKeeper's four-letter commands; returns the answer ('' on failure)."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(word.encode())
            chunks = []
            while chunk := s.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


@dataclass(frozen=True, slots=True)
class ZooKeeperTls:
    """ZooKeeper's TLS port: its keystore (PEM: key, then certificate chain, with a subject
    alternative name for the host clients connect to) and the truststore client certificates
    must chain to."""

    keystore: Path
    truststore: Path
    port: int | None = None
    """The secureClientPort; ``None``: a free one."""

    def zoo_cfg(self, host: str, port: int) -> str:
        """The zoo.cfg lines of the TLS port (ZooKeeper 3.8's names)."""
        return (
            f"secureClientPort={port}\n"
            f"secureClientPortAddress={host}\n"
            "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
            f"ssl.keyStore.location={self.keystore}\n"
            "ssl.keyStore.type=PEM\n"
            f"ssl.trustStore.location={self.truststore}\n"
            "ssl.trustStore.type=PEM\n"
            "ssl.clientAuth=need\n"
            "authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider\n"
        )


def class_path() -> str:
    """The server's class path: the package's log4j config, zookeeper.jar, Netty's extras."""
    return ":".join(str(p) for p in (ZOOKEEPER_CONF, ZOOKEEPER_JAR, *NETTY_JARS))


class ZooKeeperServer:
    """One standalone ZooKeeper server. Not thread-safe; one owner starts and stops it."""

    def __init__(
        self,
        directory: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        tick_time_ms: int = 500,
        clock: Clock | None = None,
        tls: ZooKeeperTls | None = None,
    ) -> None:
        """``tls``: also serve TLS (module docstring); the plaintext port stays open (for
        ``ruok``, and for tests of what a client without a certificate can do)."""
        self.directory = Path(directory)
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.tls = tls
        self.secure_port: int | None = None
        if tls is not None:
            self.secure_port = tls.port if tls.port is not None else free_port(host)
        self.tick_time_ms = tick_time_ms
        self._clock = clock or SystemClock()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def secure_connect_string(self) -> str:
        """``host:secureClientPort``; ``ValueError`` without TLS."""
        if self.secure_port is None:
            raise ValueError("this ZooKeeper has no TLS port")
        return f"{self.host}:{self.secure_port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _write_config(self) -> Path:
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.directory / "zoo.cfg"
        config.write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={data}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            "admin.enableServer=false\n"
            f"minSessionTimeout={2 * self.tick_time_ms}\n"
            "maxSessionTimeout=60000\n"
            "4lw.commands.whitelist=ruok,srvr,stat\n"
            + (
                self.tls.zoo_cfg(self.host, self.secure_port)
                if self.tls is not None and self.secure_port is not None
                else ""
            )
        )
        return config

    def start(self, timeout_s: float = 30.0) -> None:
        """Starts the server and waits until it answers ``ruok``.

        Raises ``ZooKeeperNotInstalledError`` when the package or Java is missing,
        ``OSError`` when something already listens on the port (another ZooKeeper there would
        answer ``ruok`` for this one, which could not bind), and ``TimeoutError`` (with the
        server's output) when it does not come up in time.
        """
        java = shutil.which("java")
        if java is None or not ZOOKEEPER_JAR.exists():
            raise ZooKeeperNotInstalledError(
                f"ZooKeeper needs java and {ZOOKEEPER_JAR} (Debian's zookeeper package); "
                "run `bash scripts/setup.sh`"
            )
        missing = [str(jar) for jar in NETTY_JARS if not jar.exists()]
        if self.tls is not None and missing:
            raise ZooKeeperNotInstalledError(
                f"ZooKeeper's TLS port needs {', '.join(missing)} (Debian's libnetty-java); "
                "run `bash scripts/setup.sh`"
            )
        if _listening(self.host, self.port):
            raise OSError(f"cannot start ZooKeeper on {self.connect_string}: the port is in use")
        if self.secure_port is not None and _listening(self.host, self.secure_port):
            raise OSError(f"cannot start ZooKeeper's TLS port {self.secure_connect_string}: in use")
        config = self._write_config()
        log = (self.directory / "zookeeper.out").open("ab")
        self._process = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                class_path(),
                f"-Dzookeeper.log.dir={self.directory}",
                "-Dzookeeper.root.logger=INFO,CONSOLE",
                MAIN_CLASS,
                str(config),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = self._clock.monotonic_ms() + int(timeout_s * 1000)
        while self._clock.monotonic_ms() < deadline:
            if self._process is not None and self._process.poll() is not None:
                break
            if four_letter_word(self.host, self.port, "ruok") == "imok" and (
                self.secure_port is None or _listening(self.host, self.secure_port)
            ):
                return
            time.sleep(0.1)
        out = (self.directory / "zookeeper.out").read_text(errors="replace")[-2000:]
        raise TimeoutError(f"ZooKeeper on {self.connect_string} did not start:\n{out}")

    def signal(self, sig: signal.Signals) -> None:
        """Sends ``sig`` (e.g. SIGSTOP / SIGCONT to pause and resume) to the server."""
        if self._process is not None:
            os.kill(self._process.pid, sig)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stops the server (SIGTERM, then SIGKILL). Safe to call twice."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGCONT)
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> ZooKeeperServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
