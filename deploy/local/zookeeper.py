"""Runs a standalone ZooKeeper server from Debian's ``zookeeper`` package.

The server is a child process (``java ... QuorumPeerMain zoo.cfg``) with its configuration,
data and log in one directory, bound to a loopback address. It is started and stopped by the
test fixtures, the benchmarks and the local cluster; nothing here needs the system service.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from odradek.clock import Clock, SystemClock

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_CONF = Path("/etc/zookeeper/conf")  # log4j.properties of the package
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


class ZooKeeperNotInstalledError(RuntimeError):
    """Debian's ``zookeeper`` package (or Java) is missing: run ``bash scripts/setup.sh``."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


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
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.tick_time_ms = tick_time_ms
        self._clock = clock or SystemClock()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

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
        if _listening(self.host, self.port):
            raise OSError(f"cannot start ZooKeeper on {self.connect_string}: the port is in use")
        config = self._write_config()
        log = (self.directory / "zookeeper.out").open("ab")
        self._process = subprocess.Popen(
            [
                java,
                "-Xmx256m",
                "-cp",
                f"{ZOOKEEPER_CONF}:{ZOOKEEPER_JAR}",
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
            if four_letter_word(self.host, self.port, "ruok") == "imok":
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
