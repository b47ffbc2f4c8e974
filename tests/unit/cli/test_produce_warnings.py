"""``produce`` shows the SDK producer's retry warnings (logger ``odradek.producer``) on stderr,
one line each, as Kafka's console producer shows its client's."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from odradek.cli.produce import show_retry_warnings


@pytest.fixture(autouse=True)
def _restore_logger() -> Iterator[None]:
    logger = logging.getLogger("odradek.producer")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


def test_producer_warnings_are_one_line_each_on_stderr(capsys):
    show_retry_warnings()
    show_retry_warnings()  # idempotent: one handler, one line per warning
    logger = logging.getLogger("odradek.producer")
    logger.warning("retrying m-0 (attempt %d): NOT_ENOUGH_REPLICAS:\n the ISR is too small", 2)
    logger.info("not shown")
    err = capsys.readouterr().err
    assert err == (
        "odradek produce: warning: retrying m-0 (attempt 2): NOT_ENOUGH_REPLICAS: the ISR is "
        "too small\n"
    )
