"""``odradek users alter | describe``: SCRAM credentials, as ``kafka-configs --entity-type users``.

::

    odradek users alter --entity-name alice \\
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=pw],SCRAM-SHA-512=[password=pw]'
    odradek users alter --entity-name alice --delete-config SCRAM-SHA-512
    odradek users describe [--entity-name alice]

The password is salted on this side (Kafka's KIP-554): the node only ever receives the salted
password and stores the derived keys in ZooKeeper (``/config/users/<name>``). Iterations default
to 4096. Needs ALTER (alter) or DESCRIBE (describe) on the cluster under an authorizer.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from odradek.cli.common import InputError, add_bootstrap_option, client_security

if TYPE_CHECKING:
    from odradek.admin import ScramUpsertion

__all__ = ["add_parser", "parse_add_config"]


def _split_top_level(text: str) -> list[str]:
    """``a=[x=1,y=2],b=[z=3]`` → ``["a=[x=1,y=2]", "b=[z=3]"]`` (commas inside brackets kept)."""
    out: list[str] = []
    depth, start = 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [item.strip() for item in out if item.strip()]


def parse_add_config(user: str, text: str) -> list[ScramUpsertion]:
    """``SCRAM-SHA-256=[iterations=8192,password=secret],...`` → the upsertions; raises
    :class:`InputError` for another shape or an unknown key."""
    from odradek.admin import ScramUpsertion

    out = []
    for item in _split_top_level(text):
        mechanism, sep, value = item.partition("=")
        value = value.strip()
        if not sep or not (value.startswith("[") and value.endswith("]")):
            raise InputError(
                f"--add-config: expected MECHANISM=[password=...,iterations=...], got {item!r}"
            )
        settings: dict[str, str] = {}
        for pair in value[1:-1].split(","):
            key, eq, v = pair.partition("=")
            if not eq:
                raise InputError(f"--add-config: expected key=value in {item!r}")
            settings[key.strip()] = v
        unknown = set(settings) - {"password", "iterations"}
        if unknown or "password" not in settings:
            raise InputError(f"--add-config: {mechanism} takes password and iterations")
        try:
            iterations = int(settings.get("iterations", "4096"))
        except ValueError:
            raise InputError(f"--add-config: iterations of {mechanism} is not a number") from None
        out.append(ScramUpsertion(user, mechanism.strip(), settings["password"], iterations))
    return out


def run_alter(args: argparse.Namespace) -> int:
    from odradek.admin import Admin, ScramDeletion

    upsertions = parse_add_config(args.user, args.add_config) if args.add_config else []
    mechanisms = [m.strip() for m in (args.delete_config or "").split(",") if m.strip()]
    deletions = [ScramDeletion(args.user, m) for m in mechanisms]
    if not upsertions and not deletions:
        raise InputError("give --add-config or --delete-config")
    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        results = admin.alter_user_scram_credentials(upsertions, deletions)
    for error in results.values():
        if error is not None:
            raise error
    print(f"Completed updating config for user {args.user}.")
    return 0


def run_describe(args: argparse.Namespace) -> int:
    from odradek.admin import Admin

    with Admin(args.bootstrap_server, **client_security(args)) as admin:
        users = admin.describe_user_scram_credentials([args.user] if args.user else None)
    for user, infos in sorted(users.items()):
        described = ",".join(f"{m}=iterations={i}" for m, i in sorted(infos.items()))
        print(f"SCRAM credential configs for user-principal '{user}' are {described}")
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``users`` and its subcommands on the ``odradek`` command's subparsers."""
    users = sub.add_parser(
        "users", help="set and show SCRAM credentials", description=__doc__.split("\n\n")[0]
    )
    actions = users.add_subparsers(
        dest="users_command", metavar="ACTION", required=True, parser_class=type(users)
    )
    alter = actions.add_parser("alter", help="add or delete a user's SCRAM credentials")
    alter.add_argument("--entity-name", "--user", dest="user", required=True, metavar="USER")
    alter.add_argument("--add-config", metavar="CONFIGS")
    alter.add_argument("--delete-config", metavar="MECHANISMS")
    describe = actions.add_parser("describe", help="show users' SCRAM mechanisms")
    describe.add_argument("--entity-name", "--user", dest="user", metavar="USER")
    for p, handler in ((alter, run_alter), (describe, run_describe)):
        add_bootstrap_option(p, top_level=False)
        p.set_defaults(handler=handler, prog=p.prog, parser=p)
