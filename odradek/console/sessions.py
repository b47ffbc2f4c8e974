"""The console's sessions: who a browser is, its CSRF token, and the cluster view it acts
through.

A browser's cookie holds only a random session id (``secrets.token_urlsafe``); the session
lives here, in memory, and ends after ``idle_timeout_ms`` without a request, at logout, or
when the console stops. Against a cluster without authentication every session acts through
one shared anonymous view; against a SASL cluster a session is anonymous (it may only log in)
until its user logs in, and then acts through a view of its own that authenticates as that
user — so the cluster's ACLs apply to everything the console does for it. Logging in gives
the session a new id (no fixation).

The password goes to the SDK client of that view, which proves it with SCRAM once and then
keeps only SCRAM's salted password (RFC 5802's SaltedPassword, from which the password cannot
be recovered) to authenticate to the nodes again when their session tokens expire; the
password itself is kept nowhere: not in the session, not in the cookie, not on disk, not in a
log. A user whose credential is changed on the server must log in again. Time is an input
(the clock). Thread-safe.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from odradek.clock import Clock
from odradek.console.refusals import ActionError
from odradek.console.view import ClusterView
from odradek.errors import OdradekError, SaslAuthenticationFailedError

__all__ = ["Session", "Sessions", "ViewFactory"]

ViewFactory = Callable[[str | None, str | None], ClusterView]
"""Makes a view for (username, password); (None, None): the anonymous one."""


@dataclass(slots=True)
class Session:
    id: str
    csrf: str
    last_seen_ms: int
    principal: str | None = None
    """``User:NAME`` once logged in; ``ANONYMOUS`` on a cluster without authentication;
    ``None`` while a login is needed."""
    view: ClusterView | None = None
    flash: list[tuple[str, str]] = field(default_factory=list)
    """Messages for the next page: (kind, sentence), kind ``ok`` or ``error``."""


class Sessions:
    def __init__(
        self,
        clock: Clock,
        make_view: ViewFactory,
        *,
        login_required: bool,
        idle_timeout_ms: int = 30 * 60_000,
    ) -> None:
        self._clock = clock
        self._make_view = make_view
        self.login_required = login_required
        self._idle_timeout_ms = idle_timeout_ms
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}
        self._anonymous: ClusterView | None = None

    def _anonymous_view(self) -> ClusterView:
        with self._lock:
            if self._anonymous is None:
                self._anonymous = self._make_view(None, None)
            return self._anonymous

    def get(self, session_id: str | None) -> Session | None:
        """The live session of ``session_id`` (its idle time restarts), or ``None``."""
        now = self._clock.monotonic_ms()
        with self._lock:
            expired = [
                s for s in self._sessions.values() if now - s.last_seen_ms > self._idle_timeout_ms
            ]
            for s in expired:
                del self._sessions[s.id]
            session = self._sessions.get(session_id or "")
            if session is not None:
                session.last_seen_ms = now
        for s in expired:
            self._close_view(s)
        return session

    def new(self) -> Session:
        """A new session: anonymous, or waiting for a login."""
        session = Session(
            secrets.token_urlsafe(32), secrets.token_urlsafe(32), self._clock.monotonic_ms()
        )
        if not self.login_required:
            session.principal = "ANONYMOUS"
            session.view = self._anonymous_view()
        with self._lock:
            self._sessions[session.id] = session
        return session

    def login(self, session: Session, username: str, password: str) -> Session:
        """Check ``username``/``password`` against the cluster and return the session that
        acts as that user (a new id; the old session ends). Raises
        :class:`~odradek.console.refusals.ActionError`: 401 for a wrong password or unknown
        user."""
        if not username or not password:
            raise ActionError("Give a username and a password.", 401)
        try:
            # the view proves the password to the cluster and keeps only SCRAM's salted
            # password (odradek.console.view.ClusterView)
            view = self._make_view(username, password)
        except ValueError as exc:
            raise ActionError(f"Cannot log in: {exc}", 400) from None
        except SaslAuthenticationFailedError:
            raise ActionError("The username or password is wrong.", 401) from None
        except OdradekError as exc:
            raise ActionError(f"Cannot log in: {exc.name}: {exc.message}", 502) from None
        fresh = Session(
            secrets.token_urlsafe(32),
            secrets.token_urlsafe(32),
            self._clock.monotonic_ms(),
            principal=f"User:{username}",
            view=view,
        )
        with self._lock:
            self._sessions.pop(session.id, None)
            self._sessions[fresh.id] = fresh
        return fresh

    def logout(self, session: Session) -> None:
        with self._lock:
            self._sessions.pop(session.id, None)
        self._close_view(session)

    def _close_view(self, session: Session) -> None:
        view, session.view = session.view, None
        if view is not None and view is not self._anonymous:
            # closing flushes a producer and waits for channels: not on the caller's (the
            # event loop's) time
            threading.Thread(target=view.close, name="console-logout", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
            anonymous, self._anonymous = self._anonymous, None
        for s in sessions:
            if s.view is not None and s.view is not anonymous:
                s.view.close()
            s.view = None
        if anonymous is not None:
            anonymous.close()
