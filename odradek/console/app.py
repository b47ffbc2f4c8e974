"""The console's web application (Starlette, an ASGI framework; Jinja2 templates).

Pages are rendered on the server; the messages page's records come as JSON from
``/api/topics/{topic}/messages`` and its live tail as server-sent events from
``/api/topics/{topic}/tail``, formatted in the page by ``static/console.js``.

Security, on every request:

* the ``odradek_console`` cookie (``Secure``, ``HttpOnly``, ``SameSite=Strict``) names a
  server-side session (:mod:`odradek.console.sessions`); without a live one the browser gets a
  new session, and on a SASL cluster the login page;
* every POST must carry the session's CSRF token (form field ``csrf`` or header
  ``X-CSRF-Token``): without it, 403 and nothing changes;
* with ``read_only`` every change is refused with 403, and the pages show no control for one;
* a refused or failed action is shown as a sentence (:mod:`odradek.console.refusals`).

The SDK is blocking: each page's cluster calls run in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from odradek.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.client.types import TopicPartition
from odradek.console.browse import RecordFilter, Seek, headers_from_form, record_json
from odradek.console.refusals import SESSION_EXPIRED, Action, ActionError, sentence
from odradek.console.sessions import Session, Sessions
from odradek.console.view import RESET_SPECS, ClusterView, ConfigRow
from odradek.errors import OdradekError

__all__ = ["ConsoleConfig", "create_app"]

COOKIE = "odradek_console"
_HERE = Path(__file__).parent
MAX_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """``read_only``: refuse and hide every change. ``secure_cookie``: mark the session cookie
    ``Secure`` (browsers keep such cookies on https and on http://localhost / 127.0.0.1)."""

    read_only: bool = False
    secure_cookie: bool = True
    tail_poll_ms: int = 500


def _fmt_bytes(n: int | None) -> str:
    """``1,234 B``, ``1.2 KiB`` ... ``-`` for unknown."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{n:,} B" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def _fmt_time(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda n: "-" if n is None else f"{n:,}"
    env.filters["bytes"] = _fmt_bytes
    env.filters["ids"] = lambda ids: ",".join(str(i) for i in ids) or "-"
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["time"] = _fmt_time
    return env


Handler = Callable[[Request, Session], Awaitable[Response]]


def create_app(sessions: Sessions, config: ConsoleConfig) -> Starlette:
    """The console application over ``sessions`` (which own the cluster views)."""
    env = _env()

    def page(
        request: Request, session: Session, template: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        flash, session.flash = session.flash, []
        html = env.get_template(template).render(
            request=request,
            session=session,
            csrf=session.csrf,
            principal=session.principal,
            read_only=config.read_only,
            login_required=sessions.login_required,
            flash=flash,
            path=request.url.path,
            **context,
        )
        return HTMLResponse(html, status_code=status)

    def set_cookie(response: Response, session: Session) -> Response:
        response.set_cookie(
            COOKIE,
            session.id,
            httponly=True,
            secure=config.secure_cookie,
            samesite="strict",
            path="/",
        )
        return response

    def error_page(request: Request, session: Session, exc: ActionError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.sentence}, status_code=exc.status)
        return page(request, session, "error.html", status=exc.status, message=exc.sentence)

    def guarded(handler: Handler, *, change: bool = False, needs_login: bool = True) -> Any:
        async def endpoint(request: Request) -> Response:
            session = sessions.get(request.cookies.get(COOKIE))
            fresh = session is None
            if session is None:
                session = sessions.new()
            if request.method == "POST":
                if fresh:
                    return PlainTextResponse("403: no session: reload the page", status_code=403)
                form = await request.form()
                token = request.headers.get("x-csrf-token") or str(form.get("csrf") or "")
                if not hmac.compare_digest(token.encode(), session.csrf.encode()):
                    return PlainTextResponse(
                        "403: the CSRF token is missing or wrong: reload the page and try again",
                        status_code=403,
                    )
                if change and config.read_only:
                    return PlainTextResponse(
                        "403: this console is read-only: it changes nothing", status_code=403
                    )
            if needs_login and session.view is None:
                if request.url.path.startswith("/api/"):
                    refused = JSONResponse({"error": "Log in first."}, status_code=401)
                    return set_cookie(refused, session) if fresh else refused
                target = "/login?" + urlencode({"next": str(request.url.path)})
                return set_cookie(RedirectResponse(target, status_code=303), session)
            try:
                try:
                    response = await handler(request, session)
                except ActionError as exc:
                    if exc.sentence != SESSION_EXPIRED or request.method != "GET":
                        raise
                    # a node forgot the session's token; the SDK authenticates again on the
                    # next call, so a page (a read) is asked once more. A change is not
                    # repeated: its page says to try again.
                    response = await handler(request, session)
            except ActionError as exc:
                response = error_page(request, session, exc)
            return set_cookie(response, session) if fresh else response

        return endpoint

    def view_of(session: Session) -> ClusterView:
        assert session.view is not None
        return session.view

    def back(request: Request, session: Session, to: str, message: str) -> Response:
        session.flash.append(("ok", message))
        return RedirectResponse(to, status_code=303)

    async def run(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await run_in_threadpool(func, *args, **kwargs)

    # --- login --------------------------------------------------------------------------------

    async def login_form(request: Request, session: Session) -> Response:
        if not sessions.login_required:
            return RedirectResponse("/", status_code=303)
        return page(request, session, "login.html", next=request.query_params.get("next", "/"))

    async def login(request: Request, session: Session) -> Response:
        form = await request.form()
        target = str(form.get("next") or "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        try:
            fresh = await run(
                sessions.login,
                session,
                str(form.get("username") or ""),
                str(form.get("password") or ""),
            )
        except ActionError as exc:
            return page(
                request, session, "login.html", status=exc.status, next=target, error=exc.sentence
            )
        return set_cookie(RedirectResponse(target, status_code=303), fresh)

    async def logout(request: Request, session: Session) -> Response:
        sessions.logout(session)
        response = RedirectResponse("/login" if sessions.login_required else "/", 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # --- overview, brokers --------------------------------------------------------------------

    async def overview(request: Request, session: Session) -> Response:
        ov, _ = await run(view_of(session).brokers)
        return page(request, session, "overview.html", ov=ov)

    async def brokers(request: Request, session: Session) -> Response:
        ov, _ = await run(view_of(session).brokers)
        return page(request, session, "brokers.html", ov=ov)

    async def broker(request: Request, session: Session) -> Response:
        node_id = _int(request.path_params["node_id"], "broker id")
        ov, cluster = await run(view_of(session).brokers)
        row = next((b for b in ov.brokers if b.node_id == node_id), None)
        if row is None:
            raise ActionError(f"There is no live broker {node_id}.", 404)
        led = []
        hosted = []
        # the users' topics first, the internal ones (__consumer_offsets) after them
        for name in sorted(cluster.topics, key=lambda n: (n.startswith("__"), n)):
            for p in cluster.topics[name].partitions:
                if node_id in p.replicas:
                    hosted.append(p)
                    if p.leader == node_id:
                        led.append(p)
        configs: tuple[ConfigRow, ...] = ()
        configs_error = None
        try:
            configs = await run(view_of(session).broker_configs, node_id)
        except ActionError as exc:
            configs_error = exc.sentence
        return page(
            request,
            session,
            "broker.html",
            b=row,
            led=led,
            hosted=hosted,
            configs=configs,
            configs_error=configs_error,
        )

    # --- topics -------------------------------------------------------------------------------

    async def topics(request: Request, session: Session) -> Response:
        search = request.query_params.get("q", "")
        rows = await run(view_of(session).topics, search)
        return page(request, session, "topics.html", rows=rows, q=search)

    async def create_topic(request: Request, session: Session) -> Response:
        form = await request.form()
        name = _text(form, "name")
        configs = dict(_config_lines(str(form.get("configs") or "")))
        await run(
            view_of(session).create_topic,
            name,
            _int(form.get("partitions") or "1", "partitions"),
            _int(form.get("replication_factor") or "-1", "replication factor"),
            configs,
        )
        return back(request, session, f"/topics/{quote(name, safe='')}", f"Created topic {name}.")

    async def topic(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        detail = await run(view_of(session).topic, name)
        return page(request, session, "topic.html", t=detail)

    async def delete_topic(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        await run(view_of(session).delete_topic, name)
        return back(request, session, "/topics", f"Deleted topic {name}.")

    async def add_partitions(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        form = await request.form()
        total = _int(form.get("total"), "partition count")
        await run(view_of(session).add_partitions, name, total)
        return back(
            request, session, f"/topics/{quote(name, safe='')}", f"{name} has {total} partitions."
        )

    async def alter_configs(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        form = await request.form()
        set_ = dict(_config_lines(str(form.get("set") or "")))
        delete = [k.strip() for k in str(form.get("delete") or "").split(",") if k.strip()]
        if not set_ and not delete:
            raise ActionError("Give configs to set (name=value lines) or to reset.")
        await run(view_of(session).alter_configs, name, set_, delete)
        return back(
            request, session, f"/topics/{quote(name, safe='')}", f"Altered the configs of {name}."
        )

    # --- messages -----------------------------------------------------------------------------

    async def messages(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        parts = await run(view_of(session).partitions_of, name)
        return page(
            request,
            session,
            "messages.html",
            topic=name,
            partitions=[p.partition for p in parts],
        )

    async def api_messages(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        q = request.query_params
        partition = (
            None if q.get("partition", "") in ("", "all") else _int(q["partition"], "partition")
        )
        kind = q.get("seek", "newest")
        value = q.get("value", "")
        limit = _int(q.get("limit") or "100", "limit")
        if not 0 < limit <= MAX_LIMIT:
            raise ActionError(f"Show between 1 and {MAX_LIMIT:,} records, not {limit}.")
        try:
            seek = Seek(kind, _int(value, kind) if kind in ("offset", "timestamp") else None)  # type: ignore[arg-type]
            record_filter = _filter(q)
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        result = await run(view_of(session).browse, name, partition, seek, limit, record_filter)
        return JSONResponse(
            {
                "records": [record_json(r) for r in result.records],
                "starts": {str(tp.partition): o for tp, o in result.starts.items()},
                "next": {str(tp.partition): o for tp, o in result.next_offsets.items()},
                "scanned": result.scanned,
                "truncated": result.truncated,
            }
        )

    async def api_tail(request: Request, session: Session) -> Response:
        """Server-sent events: each event a JSON array of the records that arrived, its id the
        positions after them (``p:o,p:o``), so a reconnecting EventSource resumes there."""
        name = request.path_params["topic"]
        q = request.query_params
        try:
            record_filter = _filter(q)
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        resume = request.headers.get("last-event-id") or q.get("from", "")
        positions = _positions(name, resume)
        if not positions:
            raise ActionError("Start the tail from a browse (no positions given).")
        view = view_of(session)
        principal = session.principal or "ANONYMOUS"
        consumer = view.consumer(max_poll_records=5000, fetch_max_wait_ms=config.tail_poll_ms)
        try:
            consumer.assign(list(positions))
            for tp, offset in positions.items():
                consumer.seek(tp, offset)
        except BaseException:
            consumer.close()
            raise

        async def events() -> AsyncIterator[str]:
            at = dict(positions)
            try:
                yield "retry: 1000\n\n"
                while True:
                    try:
                        records = await run(consumer.poll, config.tail_poll_ms)
                    except OdradekError as exc:
                        text, _ = sentence(exc, principal, Action("Read", "topic", name))
                        yield f"event: refusal\ndata: {json.dumps(text)}\n\n"
                        return
                    if not records:
                        yield ": idle\n\n"
                        continue
                    shown = []
                    for r in records:
                        at[TopicPartition(r.topic, r.partition)] = r.offset + 1
                        if record_filter is None or record_filter.matches(r):
                            shown.append(record_json(r))
                    ident = ",".join(f"{tp.partition}:{o}" for tp, o in sorted(at.items()))
                    yield f"id: {ident}\ndata: {json.dumps(shown)}\n\n"
            finally:
                await run(consumer.close)

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def produce(request: Request, session: Session) -> Response:
        name = request.path_params["topic"]
        form = await request.form()
        partition_text = str(form.get("partition") or "")
        partition = None if partition_text in ("", "any") else _int(partition_text, "partition")
        key_text = str(form.get("key") or "")
        try:
            headers = headers_from_form(str(form.get("headers") or "").splitlines())
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        p, offset = await run(
            view_of(session).produce,
            name,
            partition,
            key_text.encode() if key_text else None,
            str(form.get("value") or "").encode(),
            headers,
        )
        return back(
            request,
            session,
            f"/topics/{quote(name, safe='')}/messages",
            f"Produced a record to {name} partition {p} at offset {offset}.",
        )

    # --- transactions -------------------------------------------------------------------------

    async def transactions(request: Request, session: Session) -> Response:
        rows = await run(view_of(session).transactions)
        return page(request, session, "transactions.html", rows=rows)

    # --- groups -------------------------------------------------------------------------------

    async def groups(request: Request, session: Session) -> Response:
        rows = await run(view_of(session).groups)
        return page(request, session, "groups.html", rows=rows)

    async def group(request: Request, session: Session) -> Response:
        group_id = request.path_params["group"]
        detail = await run(view_of(session).group, group_id)
        topics_ = sorted({r.topic for r in detail.partitions})
        return page(
            request,
            session,
            "group.html",
            group_id=group_id,
            g=detail,
            topics=topics_,
            specs=RESET_SPECS,
        )

    async def reset(request: Request, session: Session) -> Response:
        group_id = request.path_params["group"]
        form = await request.form()
        topic_name = _text(form, "topic")
        parts_text = str(form.get("partitions") or "").strip()
        parts = [_int(p, "partition") for p in parts_text.split(",") if p.strip()] or None
        spec = str(form.get("spec") or "")
        value_text = str(form.get("value") or "").strip()
        value: int | None = None
        if spec == "to-datetime" and value_text:
            value = _datetime_ms(value_text)
        elif value_text:
            value = _int(value_text, spec)
        execute = form.get("execute") == "1"
        plan = await run(
            view_of(session).reset_offsets,
            group_id,
            topic_name,
            parts,
            spec,
            value,
            execute=execute,
        )
        detail = await run(view_of(session).group, group_id)
        return page(
            request,
            session,
            "group.html",
            group_id=group_id,
            g=detail,
            topics=sorted({r.topic for r in detail.partitions} | {topic_name}),
            specs=RESET_SPECS,
            plan=plan,
            executed=execute,
            reset_form={
                "topic": topic_name,
                "partitions": parts_text,
                "spec": spec,
                "value": value_text,
            },
        )

    async def delete_group(request: Request, session: Session) -> Response:
        group_id = request.path_params["group"]
        await run(view_of(session).delete_group, group_id)
        return back(request, session, "/groups", f"Deleted group {group_id}.")

    # --- security -----------------------------------------------------------------------------

    async def security(request: Request, session: Session) -> Response:
        view = view_of(session)
        acls: list[AclBinding] | None = None
        users: dict[str, dict[str, int]] | None = None
        acls_error = users_error = None
        try:
            acls = await run(view.acls)
        except ActionError as exc:
            acls_error = exc.sentence
        try:
            users = await run(view.scram_users)
        except ActionError as exc:
            users_error = exc.sentence
        return page(
            request,
            session,
            "security.html",
            acls=acls,
            users=users,
            acls_error=acls_error,
            users_error=users_error,
            resource_types=["Topic", "Group", "Cluster", "TransactionalId"],
            operations=[o.kafka_name for o in AclOperation if o.value >= AclOperation.ALL],
        )

    async def add_acl(request: Request, session: Session) -> Response:
        form = await request.form()
        try:
            await run(
                view_of(session).add_acl,
                _text(form, "resource_type"),
                str(
                    form.get("name")
                    or ("kafka-cluster" if form.get("resource_type") == "Cluster" else "")
                ),
                str(form.get("pattern_type") or "Literal"),
                _text(form, "principal"),
                str(form.get("host") or "*"),
                _text(form, "operation"),
                str(form.get("permission") or "Allow"),
            )
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        return back(request, session, "/security", "Added the ACL.")

    async def remove_acl(request: Request, session: Session) -> Response:
        form = await request.form()
        try:
            binding = AclBinding(
                ResourcePattern(
                    ResourceType.parse(_text(form, "resource_type")),
                    _text(form, "name"),
                    PatternType.parse(_text(form, "pattern_type")),
                ),
                AccessControlEntry(
                    _text(form, "principal"),
                    _text(form, "host"),
                    AclOperation.parse(_text(form, "operation")),
                    AclPermissionType.parse(_text(form, "permission")),
                ),
            )
        except ValueError as exc:
            raise ActionError(str(exc)) from None
        removed = await run(view_of(session).remove_acl, binding)
        return back(request, session, "/security", f"Removed {removed} ACL(s).")

    async def set_user(request: Request, session: Session) -> Response:
        form = await request.form()
        user = _text(form, "user")
        await run(
            view_of(session).set_scram_user,
            user,
            str(form.get("mechanism") or "SCRAM-SHA-256"),
            _text(form, "password"),
            _int(form.get("iterations") or "4096", "iterations"),
        )
        return back(request, session, "/security", f"Set the SCRAM credential of {user}.")

    async def delete_user(request: Request, session: Session) -> Response:
        form = await request.form()
        user = _text(form, "user")
        await run(view_of(session).delete_scram_user, user, _text(form, "mechanism"))
        return back(request, session, "/security", f"Deleted the SCRAM credential of {user}.")

    def change(handler: Handler) -> Any:
        return guarded(handler, change=True)

    routes = [
        Route("/login", guarded(login_form, needs_login=False), methods=["GET"]),
        Route("/login", guarded(login, needs_login=False), methods=["POST"]),
        Route("/logout", guarded(logout, needs_login=False), methods=["POST"]),
        Route("/", guarded(overview)),
        Route("/brokers", guarded(brokers)),
        Route("/brokers/{node_id}", guarded(broker)),
        Route("/topics", guarded(topics), methods=["GET"]),
        Route("/topics", change(create_topic), methods=["POST"]),
        Route("/topics/{topic}", guarded(topic)),
        Route("/topics/{topic}/delete", change(delete_topic), methods=["POST"]),
        Route("/topics/{topic}/partitions", change(add_partitions), methods=["POST"]),
        Route("/topics/{topic}/configs", change(alter_configs), methods=["POST"]),
        Route("/topics/{topic}/messages", guarded(messages)),
        Route("/topics/{topic}/produce", change(produce), methods=["POST"]),
        Route("/api/topics/{topic}/messages", guarded(api_messages)),
        Route("/api/topics/{topic}/tail", guarded(api_tail)),
        Route("/groups", guarded(groups)),
        Route("/transactions", guarded(transactions)),
        Route("/groups/{group}", guarded(group)),
        Route("/groups/{group}/reset", change(reset), methods=["POST"]),
        Route("/groups/{group}/delete", change(delete_group), methods=["POST"]),
        Route("/security", guarded(security)),
        Route("/security/acls", change(add_acl), methods=["POST"]),
        Route("/security/acls/delete", change(remove_acl), methods=["POST"]),
        Route("/security/users", change(set_user), methods=["POST"]),
        Route("/security/users/delete", change(delete_user), methods=["POST"]),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await asyncio.to_thread(sessions.close)

    return Starlette(routes=routes, lifespan=lifespan)


# --- input ------------------------------------------------------------------------------------


def _int(text: object, what: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ActionError(f"The {what} must be a whole number, not {str(text)!r}.") from None


def _text(form: FormData, name: str) -> str:
    value = str(form.get(name) or "").strip()
    if not value:
        raise ActionError(f"Give the {name.replace('_', ' ')}.")
    return value


def _config_lines(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ActionError(f"A config is 'name=value', not {line!r}.")
        out.append((key.strip(), value.strip()))
    return out


def _filter(q: Any) -> RecordFilter | None:
    pattern = q.get("pattern", "")
    if not pattern:
        return None
    return RecordFilter(pattern, q.get("field", "any") or "any", q.get("regex", "") in ("1", "on"))


def _positions(topic: str, text: str) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        p, sep, o = part.partition(":")
        if not sep:
            raise ActionError(f"A tail position is PARTITION:OFFSET, not {part!r}.")
        out[TopicPartition(topic, _int(p, "partition"))] = _int(o, "offset")
    return out


def _datetime_ms(text: str) -> int:
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ActionError(
            f"Not a date-time (YYYY-MM-DDTHH:mm:SS[.sss][+zone]): {text!r}."
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
