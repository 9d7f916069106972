"""A threaded local HTTP server that replays a script of model turns and records every request.

`ScriptedServer` listens on 127.0.0.1 (a free port), answers each POST with the next step of
its script through `respond` (one subclass per provider protocol) and keeps every request it
received (`requests`: method, path, headers, JSON body) for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Recorded:
    """One request as received: method, path, headers (lower-case keys), body (JSON or None)."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        self.method, self.path, self.headers, self.body = method, path, headers, body


class ScriptedServer:
    """Serve `steps` (a list of JSON objects, one per model call) in order; a call past the end
    gets the last step again. Use as a context manager; `url` is `http://127.0.0.1:PORT`."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = list(steps)
        self.requests: list[Recorded] = []
        self.served = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet: the test reads `requests`
                return

            def _record(self) -> Recorded:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                rec = Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(rec)
                return rec

            def do_GET(self) -> None:
                rec = self._record()
                server.get(self, rec)

            def do_POST(self) -> None:
                rec = self._record()
                if not server.accepts(rec):
                    server.get(self, rec)
                    return
                with server._lock:
                    step = server.steps[min(server.served, len(server.steps) - 1)]
                    server.served += 1
                server.respond(self, step, rec)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def accepts(self, rec: Recorded) -> bool:
        """Whether the POST `rec` is a model call that consumes a step (others get `get`)."""
        return True

    def get(self, h: BaseHTTPRequestHandler, rec: Recorded) -> None:
        """Answer a request that is not a model call: 404 with a JSON error."""
        send_json(h, 404, {"error": {"message": f"not scripted: {rec.method} {rec.path}"}})

    def respond(self, h: BaseHTTPRequestHandler, step: dict[str, Any], rec: Recorded) -> None:
        raise NotImplementedError

    def model_calls(self) -> list[Recorded]:
        return [r for r in self.requests if r.method == "POST" and self.accepts(r)]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send_json(h: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(obj).encode()
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def start_sse(h: BaseHTTPRequestHandler) -> None:
    """Begin a `text/event-stream` answer; the connection closes after the stream."""
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("cache-control", "no-cache")
    h.send_header("connection", "close")
    h.end_headers()
    h.close_connection = True


def sse(h: BaseHTTPRequestHandler, data: Any, event: str | None = None) -> None:
    """One server-sent event: optional `event:` line, `data:` with `data` as JSON (or as is)."""
    text = data if isinstance(data, str) else json.dumps(data)
    out = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
    h.wfile.write(out.encode())
    h.wfile.flush()
