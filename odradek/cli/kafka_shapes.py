"""Kafka's tool shapes for ``odradek acls`` and ``odradek users``, so an operator's scripts run
unchanged: ``kafka-acls.sh``'s ``--add``, ``--list``, ``--remove`` (and ``--force``, which only
skips its confirmation prompt; odradek asks none), and ``kafka-configs.sh``'s ``--alter`` /
``--describe`` with ``--entity-type users`` (or ``--user NAME``).

:func:`rewrite` turns those into odradek's subcommands before parsing::

    odradek acls --bootstrap-server H --add --allow-principal User:alice --operation Read --topic t
      -> odradek acls add --bootstrap-server H --allow-principal User:alice --operation Read ...
    odradek users --alter --entity-type users --entity-name alice --add-config 'SCRAM-SHA-256=[...]'
      -> odradek users alter --entity-name alice --add-config 'SCRAM-SHA-256=[...]'

Pure: argument lists in, argument lists out; :class:`InputError` for a shape it cannot take
(two actions, or an entity type other than users).
"""

from __future__ import annotations

from collections.abc import Sequence

from odradek.cli.common import InputError

__all__ = ["rewrite"]

_TOP_LEVEL_WITH_VALUE = frozenset({"--bootstrap-server", "--bootstrap-servers", "--command-config"})
_ACL_ACTIONS = {"--add": "add", "--list": "list", "--remove": "remove"}
_USER_ACTIONS = {"--alter": "alter", "--describe": "describe"}


def _command_index(argv: Sequence[str]) -> int | None:
    """Where the command word is, past the top-level options (``None``: there is none)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-"):
            return i
        i += 2 if token in _TOP_LEVEL_WITH_VALUE else 1
    return None


def rewrite(argv: Sequence[str]) -> list[str]:
    """``argv`` with Kafka's tool shapes of ``acls`` and ``users`` turned into odradek's
    subcommands; any other command line unchanged."""
    out = list(argv)
    at = _command_index(out)
    if at is None or out[at] not in ("acls", "users"):
        return out
    head, rest = out[: at + 1], out[at + 1 :]
    if rest and not rest[0].startswith("-"):
        return out  # odradek's own shape: acls add ..., users alter ...
    if out[at] == "acls":
        actions = [a for a in rest if a in _ACL_ACTIONS]
        options = [a for a in rest if a not in _ACL_ACTIONS and a != "--force"]
        if len(actions) > 1:
            raise InputError("give one of --add, --list, --remove")
        if not actions:
            return out  # argparse says what is missing
        return [*head, _ACL_ACTIONS[actions[0]], *options]
    actions = [a for a in rest if a in _USER_ACTIONS]
    if len(actions) > 1:
        raise InputError("give one of --alter, --describe")
    if not actions:
        return out
    kept: list[str] = []
    i = 0
    while i < len(rest):
        token = rest[i]
        name, eq, inline = token.partition("=")
        if token in _USER_ACTIONS:
            i += 1
            continue
        if name == "--entity-type":
            value = inline if eq else (rest[i + 1] if i + 1 < len(rest) else "")
            if value != "users":
                raise InputError(
                    f"--entity-type {value or '(missing)'}: odradek users takes users only "
                    "(topics: odradek topics alter --config)"
                )
            i += 1 if eq else 2
            continue
        if name == "--entity-default":
            raise InputError("--entity-default: SCRAM credentials are per user")
        kept.append(token)
        i += 1
    return [*head, _USER_ACTIONS[actions[0]], *kept]
