"""What the console says when the cluster refuses or fails an action: one sentence, never a
stack trace.

An authorization error becomes the sentence an operator reads in Kafka's terms —
``User:alice may not Read topic orders`` — from the principal, the action the page tried
(:class:`Action`) and the error's resource kind; any other typed error its Kafka name and
message. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from odradek.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    OdradekError,
    SaslAuthenticationFailedError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)

__all__ = ["Action", "ActionError", "acting", "sentence"]


@dataclass(frozen=True, slots=True)
class Action:
    """What a page asked of the cluster: Kafka's operation name (``Read``, ``Describe``,
    ``Alter``...), the resource kind (``topic``, ``group``, ``cluster``) and its name."""

    operation: str
    resource_type: str
    name: str = ""

    def target(self) -> str:
        if self.resource_type == "cluster":
            return "the cluster"
        return f"{self.resource_type} {self.name}".strip()


class ActionError(Exception):
    """A refused or failed action, as the sentence to show. ``status`` is the HTTP status the
    page answers with (403 for a refusal, 400 for bad input, 502 for the cluster failing)."""

    def __init__(self, sentence: str, status: int = 400) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.status = status


SESSION_EXPIRED = "The cluster's session expired (unknown or expired): try again."
"""The sentence of a call that met a session token the node forgot (it restarted, or the
session expired): the SDK dropped the token, and the next call authenticates again from the
salted password it keeps."""


def sentence(error: BaseException, principal: str, action: Action) -> tuple[str, int]:
    """The sentence and HTTP status for ``error`` met while ``principal`` did ``action``."""
    if isinstance(error, TopicAuthorizationFailedError):
        name = action.name if action.resource_type == "topic" else ""
        return f"{principal} may not {action.operation} topic {name}".rstrip(), 403
    if isinstance(error, GroupAuthorizationFailedError):
        name = action.name if action.resource_type == "group" else ""
        return f"{principal} may not {action.operation} group {name}".rstrip(), 403
    if isinstance(error, ClusterAuthorizationFailedError):
        return f"{principal} may not {action.operation} the cluster", 403
    if isinstance(error, SecurityDisabledError):
        return "This cluster has no authorizer (authorizer.class.name): it keeps no ACLs.", 400
    if isinstance(error, SaslAuthenticationFailedError):
        if "log in again" in error.message:
            return "Your credential was changed on the cluster: log out and log in again.", 401
        if "unknown or expired" in error.message:
            return SESSION_EXPIRED, 401
        return "The username or password is wrong.", 401
    if isinstance(error, OdradekError):
        message = " ".join(error.message.split())
        return f"{action.operation} {action.target()} failed: {error.name}: {message}", 400
    if isinstance(error, ValueError):
        return f"{action.operation} {action.target()}: {error}", 400
    if isinstance(error, TimeoutError):
        return f"{action.operation} {action.target()} timed out: {error}", 502
    raise error


@contextmanager
def acting(principal: str, action: Action) -> Iterator[None]:
    """Turns a typed error (or ``ValueError``/``TimeoutError``) raised inside into an
    :class:`ActionError` with its sentence."""
    try:
        yield
    except ActionError:
        raise
    except (OdradekError, ValueError, TimeoutError) as exc:
        text, status = sentence(exc, principal, action)
        raise ActionError(text, status) from exc
