"""The controller's connections to brokers (Kafka's ``ControllerChannelManager``).

One gRPC channel and one sender thread per live broker. Requests to a broker go out one at a
time, in the order they were queued. A request that fails in transport (the broker is
unreachable or slow: ``UNAVAILABLE``, ``DEADLINE_EXCEEDED``, ...) is sent again after
``retry_backoff_ms``, for as long as the broker stays registered with the manager (Kafka's
``RequestSendThread``); a broker's answer — whatever its error code — ends the request and goes
to the request's callback. UpdateMetadata is a full snapshot, so a newly queued one replaces any
older one still waiting in the queue.

Thread-safety: all public methods are thread-safe. Callbacks run on the broker's sender thread
and must not block.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from controller.config import ControllerConfig
from odradek.v1 import odradek_pb2 as pb
from odradek.v1 import odradek_pb2_grpc as pb_grpc

__all__ = ["ControllerChannelManager", "Response", "ResponseCallback"]

_log = logging.getLogger(__name__)

Request = pb.LeaderAndIsrRequest | pb.UpdateMetadataRequest | pb.StopReplicaRequest
Response = pb.LeaderAndIsrResponse | pb.UpdateMetadataResponse | pb.StopReplicaResponse
ResponseCallback = Callable[[Response], None]

_RETRIABLE = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.INTERNAL,
}


@dataclass(frozen=True, slots=True)
class _Item:
    request: Request
    callback: ResponseCallback | None


class _RequestSendThread:
    """Sends one broker's requests in order, retrying transport failures."""

    def __init__(
        self,
        broker_id: int,
        target: str,
        channel: grpc.Channel,
        config: ControllerConfig,
    ) -> None:
        self.broker_id = broker_id
        self.target = target
        self._channel = channel
        self._stub = pb_grpc.ReplicationStub(channel)
        self._config = config
        self._queue: collections.deque[_Item] = collections.deque()
        self._cond = threading.Condition()
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"controller-send-{broker_id}", daemon=True
        )
        self._thread.start()

    def enqueue(self, item: _Item) -> None:
        with self._cond:
            if isinstance(item.request, pb.UpdateMetadataRequest):
                kept = [
                    i for i in self._queue if not isinstance(i.request, pb.UpdateMetadataRequest)
                ]
                self._queue.clear()
                self._queue.extend(kept)
            self._queue.append(item)
            self._cond.notify()

    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def stop(self) -> None:
        self._stopped.set()
        with self._cond:
            self._queue.clear()
            self._cond.notify()
        self._channel.close()

    def join(self, timeout_s: float) -> None:
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout_s)

    def _next(self) -> _Item | None:
        with self._cond:
            while not self._queue and not self._stopped.is_set():
                self._cond.wait()
            if self._stopped.is_set():
                return None
            return self._queue[0]

    def _done(self, item: _Item) -> None:
        with self._cond:
            if self._queue and self._queue[0] is item:
                self._queue.popleft()

    def _call(self, request: Request) -> Response:
        timeout_s = self._config.request_timeout_ms / 1000
        if isinstance(request, pb.LeaderAndIsrRequest):
            return self._stub.LeaderAndIsr(request, timeout=timeout_s)
        if isinstance(request, pb.UpdateMetadataRequest):
            return self._stub.UpdateMetadata(request, timeout=timeout_s)
        return self._stub.StopReplica(request, timeout=timeout_s)

    def _run(self) -> None:
        while True:
            item = self._next()
            if item is None:
                return
            try:
                response = self._call(item.request)
            except grpc.RpcError as e:
                if self._stopped.is_set():
                    return
                code = _status_code(e)
                if code in _RETRIABLE:
                    _log.debug(
                        "%s to broker %d at %s failed (%s); retrying",
                        type(item.request).__name__,
                        self.broker_id,
                        self.target,
                        code,
                    )
                    self._stopped.wait(self._config.retry_backoff_ms / 1000)
                    continue
                _log.error(
                    "%s to broker %d failed for good: %s",
                    type(item.request).__name__,
                    self.broker_id,
                    e,
                )
                self._done(item)
                continue
            except ValueError:
                # The channel was closed under us: the broker was removed.
                return
            self._done(item)
            if item.callback is not None and not self._stopped.is_set():
                try:
                    item.callback(response)
                except Exception:
                    _log.exception("response callback for broker %d failed", self.broker_id)


def _status_code(error: grpc.RpcError) -> grpc.StatusCode:
    code = getattr(error, "code", None)
    result = code() if callable(code) else None
    return result if isinstance(result, grpc.StatusCode) else grpc.StatusCode.UNKNOWN


class ControllerChannelManager:
    """Per-broker senders of LeaderAndIsr, UpdateMetadata and StopReplica."""

    def __init__(
        self,
        config: ControllerConfig,
        channel_factory: Callable[[str], grpc.Channel] = grpc.insecure_channel,
    ) -> None:
        self._config = config
        self._channel_factory = channel_factory
        self._senders: dict[int, _RequestSendThread] = {}
        self._lock = threading.Lock()

    def add_broker(self, broker_id: int, target: str) -> None:
        """Start sending to ``broker_id`` at ``target`` (``host:port``); replaces a sender to
        another address."""
        with self._lock:
            old = self._senders.get(broker_id)
            if old is not None and old.target == target:
                return
            self._senders[broker_id] = _RequestSendThread(
                broker_id, target, self._channel_factory(target), self._config
            )
        if old is not None:
            old.stop()

    def remove_broker(self, broker_id: int) -> None:
        """Stop sending to ``broker_id``; its queued requests are dropped."""
        with self._lock:
            sender = self._senders.pop(broker_id, None)
        if sender is not None:
            sender.stop()

    def brokers(self) -> set[int]:
        with self._lock:
            return set(self._senders)

    def send(
        self, broker_id: int, request: Request, callback: ResponseCallback | None = None
    ) -> bool:
        """Queue ``request`` for ``broker_id``; ``False`` if the broker is unknown."""
        with self._lock:
            sender = self._senders.get(broker_id)
        if sender is None:
            return False
        sender.enqueue(_Item(request, callback))
        return True

    def queued(self, broker_id: int) -> int:
        """Requests queued or in flight for ``broker_id`` (for tests and diagnostics)."""
        with self._lock:
            sender = self._senders.get(broker_id)
        return sender.queued() if sender is not None else 0

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop every sender; queued requests are dropped."""
        with self._lock:
            senders = list(self._senders.values())
            self._senders.clear()
        for sender in senders:
            sender.stop()
        for sender in senders:
            sender.join(timeout_s)
