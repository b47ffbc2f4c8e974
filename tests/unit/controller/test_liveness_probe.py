"""controller.liveness_probe: only a refused connection says a broker is gone."""

from __future__ import annotations

import socket
import threading

from controller.liveness_probe import LivenessProbe, refused


def test_refused_only_where_nothing_listens() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert not refused(f"127.0.0.1:{port}", 200)
    # the same port, closed: nothing listens any more
    assert refused(f"127.0.0.1:{port}", 200)
    assert not refused("not-an-address", 200)


def test_a_bound_but_stopped_listener_is_not_mistaken_for_a_paused_one() -> None:
    # a paused process keeps its listening socket: its kernel still completes connections
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(1)
        assert not refused(f"127.0.0.1:{listening.getsockname()[1]}", 200)


def test_the_probe_reports_the_dead_only() -> None:
    dead: list[tuple[int, int]] = []
    done = threading.Event()

    def check(target: str, _timeout_ms: int) -> bool:
        if target == "last":
            done.set()
        return target == "gone"

    probe = LivenessProbe(lambda b, e: dead.append((b, e)), check=check)
    probe.probe(1, 10, "alive")
    probe.probe(2, 20, "gone")
    probe.probe(3, 30, "last")
    assert done.wait(10)
    probe.shutdown()
    assert dead == [(2, 20)]
