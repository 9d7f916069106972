"""The first check of every request: it must be addressed to this dashboard on loopback.

A web page on any other site can make the browser send requests to 127.0.0.1, and with DNS
rebinding even read the answers under its own name. So every request whose `Host` is not a
loopback name with the served port gets 403, and every POST whose `Origin` (when the browser
sends one) is not the served origin gets 403 too. Then, before anything reads a request body,
a POST must be a small HTML form: `application/x-www-form-urlencoded` (else 415) with a
Content-Length of at most BODY_CAP bytes (else 411 or 413), so nobody (logged in or not) can make
the server parse, buffer or spool a large or multipart upload. Every answer also carries headers
that keep it out of frames, caches and Referer lines, and a Content-Security-Policy that runs no
script but the dashboard's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
BODY_CAP = 64 * 1024  # bytes of a POST body: the dashboard's forms send a few hundred
FORM_TYPE = "application/x-www-form-urlencoded"
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEADERS = (
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
                                 b" connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer makes Chromium send `Origin: null` on a POST
    (b"cache-control", b"no-store"),
)
FORBIDDEN = (b"<!doctype html><title>403</title><p>403: this dashboard answers only requests addressed to"
             b" it on loopback (Host/Origin check).</p>\n")
BODY_REFUSED = {
    411: b"<!doctype html><title>411</title><p>411: a form must state its Content-Length.</p>\n",
    413: b"<!doctype html><title>413</title><p>413: a form of the dashboard is at most 64 KiB.</p>\n",
    415: b"<!doctype html><title>415</title><p>415: the dashboard takes only HTML forms"
         b" (application/x-www-form-urlencoded).</p>\n",
}


def allowed_hosts(port: int) -> frozenset[str]:
    """The `Host` values the dashboard on `port` answers: each loopback name with the port."""
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def allowed_origins(port: int) -> frozenset[str]:
    return frozenset(f"http://{host}" for host in allowed_hosts(port))


class Guard:
    """ASGI middleware: the Host and Origin checks, then the security headers on every answer."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.hosts = allowed_hosts(port)
        self.origins = allowed_origins(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # only HTTP passes the checks below: refused here, not
            await send({"type": "websocket.close", "code": 1008})  # only by the server's config
            return
        if scope["type"] != "http":  # lifespan: the app's start and stop
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, list[bytes]] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(bytes(key).lower(), []).append(bytes(value))
        method = scope.get("method", "GET")
        if not self._addressed_to_us(method, headers):
            await _refuse(send, 403, FORBIDDEN)
            return
        if method not in ("GET", "HEAD"):
            status = body_refused(headers)
            if status is not None:
                await _refuse(send, status, BODY_REFUSED[status])
                return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)

    def _addressed_to_us(self, method: str, headers: dict[bytes, list[bytes]]) -> bool:
        host = headers.get(b"host", [])
        if len(host) != 1 or host[0].decode("latin-1").lower() not in self.hosts:
            return False
        if method in ("GET", "HEAD"):
            return True
        origin = headers.get(b"origin", [])
        return len(origin) <= 1 and all(o.decode("latin-1").lower() in self.origins for o in origin)


def body_refused(headers: dict[bytes, list[bytes]]) -> int | None:
    """The status refusing a request body by its headers alone (nothing of it read), or None:
    415 unless it is one urlencoded form, 411 without one Content-Length, 413 over BODY_CAP."""
    kind = headers.get(b"content-type", [])
    if len(kind) != 1 or kind[0].decode("latin-1").split(";", 1)[0].strip().lower() != FORM_TYPE:
        return 415
    if b"transfer-encoding" in headers:  # chunked: the length is known only once it is read
        return 411
    length = headers.get(b"content-length", [])
    if len(length) != 1 or not length[0].strip().isdigit():
        return 411
    return 413 if int(length[0]) > BODY_CAP else None


async def _refuse(send: Send, status: int, body: bytes) -> None:
    """Answer `status` with `body` without reading the request's body."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/html; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), (b"connection", b"close"),
                            *HEADERS]})
    await send({"type": "http.response.body", "body": body})
