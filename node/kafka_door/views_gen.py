"""Generates :mod:`node.kafka_door.views`: one typed request view per API the door serves.

A handler serves a range of versions, each a different ``kio`` class; its view is a
``typing.Protocol`` holding the fields **every served version** has (at each level of nesting),
typed as plain Python values (kio's ``i32``/``BrokerId``... as ``int``, ``TopicName``/``GroupId``
... as ``str``, ``Records`` as ``bytes``, entity tuples as ``Sequence`` of their own views). A
handler annotated with its view gets mypy's checks of every field it reads; a field only some
versions have stays an explicit ``getattr(request, name, default)``. Nothing here runs at
request time.

``python -m node.kafka_door.views_gen`` rewrites ``views.py``; ``--check`` fails when it is not
what the registry and kio give (``tests/unit/kafka_door/test_views.py`` runs the check).
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import types
import typing
import uuid
from pathlib import Path
from typing import Any

__all__ = ["generate"]

_PATH = Path(__file__).with_name("views.py")


def _served() -> list[tuple[int, str, list[int]]]:
    """(api key, name, versions served) of every client API of the registry."""
    from node.kafka_door.apis import build_registry  # the handlers need nothing at import

    class _Sasl:
        handshake = authenticate = None

    registry = build_registry(None, _Sasl())  # type: ignore[arg-type]
    out = []
    for api in registry:
        if api.broker_only or api.name == "ApiVersions":
            continue
        low = max(api.min_version, api.refused_below)
        out.append((api.key, api.name, list(range(low, api.max_version + 1))))
    return out


def _plain(tp: Any) -> str | None:
    """The plain type of a kio leaf type, or ``None`` for an entity (a dataclass)."""
    if tp is type(None):
        return "None"
    if dataclasses.is_dataclass(tp):
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return None
    supertype = getattr(tp, "__supertype__", None)  # a NewType
    if supertype is not None:
        return _plain(supertype)
    if isinstance(tp, type):
        for base, name in (
            (bool, "bool"),
            (int, "int"),
            (str, "str"),
            (bytes, "bytes"),
            (datetime.timedelta, "datetime.timedelta"),
            (datetime.datetime, "datetime.datetime"),
            (uuid.UUID, "uuid.UUID"),
            (float, "float"),
        ):
            if issubclass(tp, base):
                return name
    return "Any"


class _Generator:
    def __init__(self) -> None:
        self.protocols: dict[str, list[str]] = {}

    def type_of(self, name: str, tps: list[Any]) -> str:
        """The view type of a field whose kio types (one per version) are ``tps``."""
        options: list[str] = []
        entities: list[type[Any]] = []
        sequences: list[list[Any]] = []
        for tp in tps:
            for part in (
                typing.get_args(tp)
                if typing.get_origin(tp) in (typing.Union, types.UnionType)
                else (tp,)
            ):
                if typing.get_origin(part) is tuple:
                    sequences.append([typing.get_args(part)[0]])
                elif dataclasses.is_dataclass(part):
                    entities.append(part)  # type: ignore[arg-type]
                else:
                    plain = _plain(part)
                    if plain is not None and plain not in options:
                        options.append(plain)
        if sequences:
            inner = self.type_of(name, [s[0] for s in sequences])
            options.insert(0, f"Sequence[{inner}]")
        if entities:
            options.insert(0, self.entity(name, entities))
        if "None" in options:
            options.remove("None")
            options.append("None")
        return " | ".join(options)

    def entity(self, hint: str, classes: list[type[Any]]) -> str:
        """A Protocol for the fields common to ``classes`` (the same entity in each version)."""
        base = classes[-1].__name__
        name = base + "View"
        hints = [typing.get_type_hints(c) for c in classes]
        common = [
            f.name for f in dataclasses.fields(classes[-1]) if all(f.name in h for h in hints)
        ]
        lines = [f"class {name}(Protocol):"]
        doc_versions = sorted({int(getattr(c, "__version__", -1)) for c in classes})
        lines.append(
            f'    """{base}: the fields of versions {doc_versions[0]}-{doc_versions[-1]}."""'
        )
        lines.append("")
        if not common:
            lines.append("    pass")
        for field in common:
            lines.append("    @property")
            lines.append(
                f"    def {field}(self) -> {self.type_of(field, [h[field] for h in hints])}: ..."
            )
        if name in self.protocols and self.protocols[name] != lines:
            # the same entity name under two APIs: qualify it by the API
            name = f"{hint.title().replace('_', '')}{name}"
            lines[0] = f"class {name}(Protocol):"
        self.protocols[name] = lines
        return name


def generate() -> str:
    from node.kafka_door.frames import request_class

    gen = _Generator()
    aliases: list[str] = []
    for key, api_name, versions in _served():
        classes = [request_class(key, v) for v in versions]
        view = gen.entity(api_name, classes)
        aliases.append(f"    {key}: {view!r},  # {api_name} v{versions[0]}-v{versions[-1]}")
    body = "\n\n\n".join("\n".join(lines) for lines in gen.protocols.values())
    return (
        '"""Typed request views of the Kafka door\'s APIs: generated by\n'
        ":mod:`node.kafka_door.views_gen` from the registry and kio (do not edit).\n\n"
        "Each view holds the fields every served version of its request has; a handler annotated\n"
        "with it has each field it reads checked by mypy.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "import datetime\n"
        "import uuid\n"
        "from collections.abc import Sequence\n"
        "from typing import Any, Protocol\n\n"
        '__all__ = ["VIEWS"]\n\n\n'
        f"{body}\n\n\n"
        "VIEWS: dict[int, str] = {\n" + "\n".join(aliases) + "\n}\n"
        '"""API key -> the name of its request view."""\n'
    )


def main(argv: list[str]) -> int:
    text = generate()
    if "--check" in argv:
        if _PATH.read_text() != text:
            sys.stderr.write(
                f"{_PATH} is not what the registry and kio give: run python -m {__name__}\n"
            )
            return 1
        return 0
    _PATH.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
