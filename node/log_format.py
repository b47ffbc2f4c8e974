"""How a node's log lines look: ``log.format=text`` (the default) or ``json``.

``json`` writes one JSON object per line, for log shippers (Loki, Elasticsearch, Cloud
Logging): ``{"ts": "2026-01-01T12:00:00.123Z", "level": "INFO", "logger": "node.server",
"thread": "MainThread", "message": "...", "node_id": 1}`` plus ``"exc"`` (the traceback) when
the record carries one. Times are UTC, from the log record (its ``created``), not a clock read.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s [%(threadName)s] %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record. Thread-safe (no state beyond the node id)."""

    def __init__(self, node_id: int | None = None) -> None:
        super().__init__()
        self._node_id = node_id

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC)
        out: dict[str, object] = {
            "ts": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "thread": record.threadName,
            "message": record.getMessage(),
        }
        if self._node_id is not None:
            out["node_id"] = self._node_id
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(level: str, log_format: str, node_id: int | None = None) -> None:
    """Send the process's log records to stderr in ``log_format`` (``text`` or ``json``)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter(node_id))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("kazoo").setLevel(logging.WARNING)
