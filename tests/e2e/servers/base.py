"""A threaded local HTTP server on 127.0.0.1:<free port> that replays a script of steps.

A script is a JSON list of steps (or `{"steps": [...]}` in a fixture file). Each step is a dict
the provider subclass renders into one HTTP answer: for example `{"text": "done"}`,
`{"tool_use": {"name": "Write", "input": {...}}}` or `{"error": "rate_limit", "retry_after": 3}`.
Which requests consume a step is the provider's call (`scripted`): an agent CLI also sends side
requests (titles, token counts, quota probes) that get the provider's `side_answer` instead.
Concurrent conversations (a subagent that runs beside its parent) get scripts of their own:
`lanes` maps a lane name to its steps, and the provider's `lane` says which lane a request
belongs to ("main", the `steps`, by default). When a lane's script is exhausted every request
in it gets `fallback` (a final text by default), so a CLI that asks once more than expected
ends rather than hangs. A step with `"repeat": true` answers every later request of its lane too
(a provider that keeps refusing).

Every request is recorded (`Request`: method, path, headers, JSON body, the step it got) in
`requests` and appended as one JSON line to `log_path` when given.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar


@dataclass
class Request:
    """One request as the server saw it; `step` is the script step it was answered with (None
    for a side request)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    step: dict[str, Any] | None = None


@dataclass
class Answer:
    """One HTTP answer: status, headers, and the body as bytes or as SSE chunks (streamed)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: list[bytes] | None = None


def load_script(path: Path) -> list[dict[str, Any]]:
    """The steps of a fixture file: a JSON list, or an object with a `steps` list."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    steps = doc["steps"] if isinstance(doc, dict) else doc
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ValueError(f"{path}: a script is a list of step objects")
    return steps


def json_answer(status: int, doc: Any, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"content-type": "application/json", **(headers or {})}, json.dumps(doc).encode())


def sse(event: str | None, data: Any) -> bytes:
    """One server-sent event: `event:` line (when named) and one `data:` line of JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class ScriptedServer:
    """Base class: subclasses implement `scripted` and `render` (and may override `side_answer`).

    Use as a context manager; `url` is `http://127.0.0.1:<port>`.
    """

    fallback: ClassVar[dict[str, Any]] = {"text": "Done."}

    def __init__(self, steps: list[dict[str, Any]], log_path: Path | None = None,
                 lanes: dict[str, list[dict[str, Any]]] | None = None) -> None:
        self.scripts = {"main": list(steps), **{k: list(v) for k, v in (lanes or {}).items()}}
        self.log_path = log_path
        self.requests: list[Request] = []
        self.used = {name: 0 for name in self.scripts}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    # -- provider hooks -------------------------------------------------------------------
    def scripted(self, request: Request) -> bool:
        """Whether `request` consumes the next step (else it gets `side_answer`)."""
        raise NotImplementedError

    def lane(self, request: Request) -> str:
        """The lane (script) a scripted request belongs to."""
        return "main"

    def render(self, request: Request, step: dict[str, Any], index: int) -> Answer:
        """The HTTP answer for `step` (the `index`-th one consumed)."""
        raise NotImplementedError

    def side_answer(self, request: Request) -> Answer:
        return json_answer(404, {"error": f"no scripted answer for {request.method} {request.path}"})

    # -- lifecycle ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def scripted_requests(self) -> Iterator[Request]:
        return (r for r in self.requests if r.step is not None)

    @property
    def consumed(self) -> int:
        """Steps consumed in all lanes."""
        return sum(self.used.values())

    # -- request handling -----------------------------------------------------------------
    def _answer(self, request: Request) -> Answer:
        with self._lock:
            index = 0
            if self.scripted(request):
                name = self.lane(request)
                script = self.scripts.get(name, [])
                index = self.used.get(name, 0)
                step = script[index] if index < len(script) else dict(self.fallback)
                self.used[name] = index + (0 if step.get("repeat") else 1)
                request.step = step
            else:
                step = None
            self.requests.append(request)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"method": request.method, "path": request.path,
                                          "headers": request.headers, "body": request.body,
                                          "step": step}) + "\n")
        return self.render(request, step, index) if step is not None else self.side_answer(request)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                answer = server._answer(request)
                self.send_response(answer.status)
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                if answer.chunks is None:
                    self.send_header("content-length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                    return
                self.send_header("transfer-encoding", "chunked")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in answer.chunks:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")

            do_GET = do_POST = do_HEAD = _serve

        return Handler
