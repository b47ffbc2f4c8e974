"""``odradek dump-log``: placeholder replaced by the dump-log implementation."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("dump-log", help="print segment files")
    p.add_argument("paths", nargs="+")
    p.set_defaults(handler=lambda args: 1)
