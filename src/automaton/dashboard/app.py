"""The dashboard's routes (a Starlette app behind the Host/Origin guard).

GET  /                                   loops of every project (tbody refreshed from /fragment/loops)
GET  /p/{i}/loop/{name}                  one loop (refreshed from /fragment/p/{i}/loop/{name})
GET  /p/{i}/loop/{name}/tick/{n}         one tick: its diff and runs/<n>/ files
GET  /p/{i}/loop/{name}/approve          what an approval would seal; POST approves it (session + CSRF)
POST /p/{i}/loop/{name}/pause|resume|rearm  (session + CSRF + form key, as every POST)
GET  /tasks                              the task board; POST /p/{i}/task/{task}/approve signs off
GET  /login?token=T                      the one-time login: the cookie, and the form key once; POST /logout
GET  /static/dashboard.css|js
Every page answers 404 for an unknown project, loop, task or tick, 403 for an act without a
session, its CSRF token and its form key, 409 for an act a use case refused (nothing changed),
and a one-line 500 page for a bug (traceback on stderr). The Guard has refused a POST body that
is not a small urlencoded form before any of this runs.

A project index of `site.remotes` (`--state-remote`) shows a state remote's loops: the list
refreshes it (`remote.RemoteView.refresh`, bounded; a failure is a banner row), a loop whose
state does not verify answers 409 on every page and act, and each act goes through
`remote_state.remote_act` and answers a page with its result lines instead of a redirect.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from automaton.core.errors import AutomatonError, BadInput, Refused
from automaton.core.outcome import Outcome
from automaton.dashboard import actions, board, ticks, views
from automaton.dashboard.guard import BODY_CAP, Guard
from automaton.dashboard.pages import STATIC, Site
from automaton.dashboard.remote import RemoteView

Handler = Callable[[Site, Request], Response]


def _page(site: Site, fn: Handler) -> Callable[[Request], Response]:
    """A sync endpoint (Starlette runs it in a worker thread) whose failures become pages."""

    @functools.wraps(fn)
    def endpoint(request: Request) -> Response:
        try:
            return fn(site, request)
        except views.NotFound as exc:
            return site.message(request, 404, "not found", exc.message)
        except Refused as exc:
            return site.message(request, 409, "refused: nothing changed", exc.message, request.url.path)
        except BadInput as exc:
            return site.message(request, 409, "cannot be read or done: nothing changed", exc.message,
                                request.url.path)
        except AutomatonError as exc:
            return site.message(request, 500, "error", exc.message)
        except Exception as exc:
            return site.crashed(request, exc)

    return endpoint


def _loop_of(site: Site, request: Request) -> tuple[int, Any, str]:
    i = int(request.path_params["i"])
    project = views.project_at(site.projects, i)
    view = site.remotes.get(i)
    if view is not None:  # Unverified (409) for a state that does not verify; else its verified folder
        site.refresh()
        project = views.project_at(site.projects, i)
        try:
            view.verified(request.path_params["name"])
        except BadInput as exc:
            raise views.NotFound(exc.message) from None
    return i, project, views.loop_name(project, request.path_params["name"])


def _rows(site: Site) -> dict[str, Any]:
    banners = site.refresh()
    rows = views.loop_rows(site.projects)
    for i, view in site.remotes.items():
        rows += view.tampered_rows(i, views.error_row)
    return {"rows": rows, "banners": banners}


def loops_page(site: Site, request: Request) -> Response:
    return site.render(request, "loops.html", **_rows(site), account=views.account_panel())


def loops_fragment(site: Site, request: Request) -> Response:
    return site.render(request, "loops_rows.html", **_rows(site))


def _loop_context(site: Site, request: Request) -> dict[str, Any]:
    i, project, loop = _loop_of(site, request)
    return {"i": i, "loop": loop, "project_name": project.root.name, "page": views.loop_page(project, loop)}


def loop_page(site: Site, request: Request) -> Response:
    return site.render(request, "loop.html", **_loop_context(site, request))


def loop_fragment(site: Site, request: Request) -> Response:
    return site.render(request, "loop_live.html", **_loop_context(site, request))


def tick_page(site: Site, request: Request) -> Response:
    i, project, loop = _loop_of(site, request)
    view = site.remotes.get(i)
    tick = ticks.tick_page(project, loop, int(request.path_params["n"]), None if view is None else view.checkout.root)
    return site.render(request, "tick.html", i=i, loop=loop, project_name=project.root.name, tick=tick)


def approve_page(site: Site, request: Request) -> Response:
    i, project, loop = _loop_of(site, request)
    sid = site.sid(request)
    # A remote loop's review is read from its verified copy (no lock: nothing ticks there); the
    # approval re-reads it from the remote and is refused unless it is still what was shown.
    human = site.human if sid is not None and i not in site.remotes else None
    try:
        review = actions.review(project, loop, human)
    except Refused as exc:  # a tick runs now, or the project config is not sealed: say so, offer nothing
        review, note = actions.review(project, loop, None), exc.message
    else:
        note = ""
    summary = views.summary(project, loop)  # the `--loop-status --json` object, not the loop state
    can = sid is not None and not note and (summary["status"] == "halted" or bool(summary["tamper"]) or review.ask)
    binding = site.gate.sign(sid, f"review:{i}:{loop}", review.seen) if sid is not None else ""
    return site.render(request, "approve.html", i=i, loop=loop, project_name=project.root.name, s=summary,
                       review=review, can_approve=can, note=note, binding=binding)


FORM_FIELDS = 64  # fields of a form: the dashboard's have at most five
NEEDS = ("this act needs a logged-in session, the page's CSRF token and the key the login left in this browser"
         " (log in with the one-time URL the dashboard printed, with JavaScript on, then use its forms)")


async def _form(site: Site, request: Request) -> tuple[str, dict[str, str]] | Response:
    """(session id, form fields) of an act, or the 403 page when the session, the CSRF token or
    the form key is missing. The session is checked before the body is read: without one,
    nothing of the body is parsed."""
    sid = site.sid(request)
    if site.human is None or sid is None:
        return site.message(request, 403, "forbidden: nothing changed", NEEDS)
    body = await request.body()
    try:
        pairs = parse_qsl(body[:BODY_CAP].decode("utf-8", "replace"), keep_blank_values=True,
                          max_num_fields=FORM_FIELDS)
    except ValueError:
        return site.message(request, 400, "not a form of this dashboard: nothing changed",
                            f"a form has at most {FORM_FIELDS} fields")
    form = dict(pairs)
    if not site.gate.check_csrf(sid, form.get("csrf")) or not site.gate.check_key(sid, form.get("key")):
        return site.message(request, 403, "forbidden: nothing changed", NEEDS)
    return sid, form


def _post(site: Site, fn: Handler) -> Callable[[Request], Any]:
    """An async POST endpoint: check the session and CSRF token (else 403, nothing runs), then
    run `fn` like a page (in a worker thread, failures as pages)."""
    body = _page(site, fn)

    async def endpoint(request: Request) -> Response:
        checked = await _form(site, request)
        if isinstance(checked, Response):
            return checked
        request.state.sid, request.state.form = checked
        return await run_in_threadpool(body, request)

    return endpoint


def do_approve(site: Site, request: Request) -> Response:
    i, project, loop = _loop_of(site, request)
    seen, mac = request.state.form.get("seen", ""), request.state.form.get("seen_mac", "")
    if not site.gate.check_sign(request.state.sid, f"review:{i}:{loop}", seen, mac):
        return site.message(request, 403, "forbidden: nothing changed", "the approval is not bound to a review"
                            " this dashboard showed you: open the approve page again")
    assert site.human is not None
    view = site.remotes.get(i)
    if view is not None:
        return _remote_result(site, request, view, i, loop, view.act(loop, "approve", site.human, seen))
    actions.approve_loop(project, loop, site.human, seen)
    return RedirectResponse(f"/p/{i}/loop/{loop}", status_code=303)


def _remote_result(site: Site, request: Request, view: RemoteView, i: int, loop: str, out: Outcome) -> Response:
    """The page after an act on a state remote: the act's lines (the push included), 200 when
    it landed, 409 when the remote did not take it (nothing changed there)."""
    back = f"/p/{i}/loop/{loop}"
    if out.ok:
        return site.message(request, 200, f"done on the state remote {view.remote}", "; ".join(out.lines), back)
    return site.message(request, 409, "refused: nothing changed", "; ".join(out.lines), back)


def _status_act(site: Site, request: Request, what: str) -> Response:
    i, project, loop = _loop_of(site, request)
    assert site.human is not None
    view = site.remotes.get(i)
    if view is not None:
        return _remote_result(site, request, view, i, loop, view.act(loop, what, site.human))
    {"pause": actions.pause_loop, "resume": actions.resume_loop, "rearm": actions.rearm_loop}[what](
        project, loop, site.human)
    return RedirectResponse(f"/p/{i}/loop/{loop}", status_code=303)


def do_pause(site: Site, request: Request) -> Response:
    return _status_act(site, request, "pause")


def do_resume(site: Site, request: Request) -> Response:
    return _status_act(site, request, "resume")


def do_rearm(site: Site, request: Request) -> Response:
    return _status_act(site, request, "rearm")


def do_signoff(site: Site, request: Request) -> Response:
    project = views.project_at(site.projects, int(request.path_params["i"]))
    task = views.task_ref(project, request.path_params["task"])
    form = request.state.form
    assert site.human is not None
    actions.sign_off(project, task, site.human, form.get("phase", ""), form.get("sha256", ""))
    return RedirectResponse("/tasks", status_code=303)


def do_logout(site: Site, request: Request) -> Response:
    site.gate.end(request.state.sid)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(site.cookie, path="/")
    return response


def tasks_page(site: Site, request: Request) -> Response:
    return site.render(request, "tasks.html", board=board.task_board(site.projects))


def login(site: Site, request: Request) -> Response:
    """Redeem the one-time token: set the session cookie and answer the one page that carries
    the session's form key (`data-key`), which dashboard.js moves into localStorage before it
    goes on to `/`. A cookie holder cannot fetch this page again: the token is used up."""
    cookie = site.gate.redeem(request.query_params.get("token", ""))
    if cookie is None:
        return site.message(request, 403, "login refused", "this login link was already used, has expired or is"
                            " wrong; restart automaton --dashboard for a new one")
    sid = cookie.partition(".")[0]
    response = site.render(request, "login.html", session=True, csrf=site.gate.csrf(sid), form_key=site.gate.key(sid))
    response.set_cookie(site.cookie, cookie, httponly=True, samesite="strict", path="/")
    return response


def static(site: Site, request: Request) -> Response:
    name = request.path_params["file"]
    if name not in STATIC:
        raise views.NotFound(f"no static file {name!r}")
    return Response(site.static[name], media_type=STATIC[name])


PAGES: list[tuple[str, Handler]] = [
    ("/", loops_page), ("/fragment/loops", loops_fragment), ("/tasks", tasks_page), ("/login", login),
    ("/p/{i:int}/loop/{name}", loop_page), ("/fragment/p/{i:int}/loop/{name}", loop_fragment),
    ("/p/{i:int}/loop/{name}/tick/{n:int}", tick_page), ("/p/{i:int}/loop/{name}/approve", approve_page),
    ("/static/{file}", static),
]
POSTS: list[tuple[str, Handler]] = [
    ("/p/{i:int}/loop/{name}/approve", do_approve), ("/p/{i:int}/loop/{name}/pause", do_pause),
    ("/p/{i:int}/loop/{name}/resume", do_resume), ("/p/{i:int}/loop/{name}/rearm", do_rearm),
    ("/p/{i:int}/task/{task:path}/approve", do_signoff),
    ("/logout", do_logout),
]


def create_app(site: Site) -> Guard:
    """The ASGI app of `site`: the routes above behind `guard.Guard` for `site.port`."""
    routes = [Route(path, _page(site, fn), methods=["GET", "HEAD"]) for path, fn in PAGES]
    routes += [Route(path, _post(site, fn), methods=["POST"]) for path, fn in POSTS]

    def http_error(request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        text = {404: "no such page", 405: "this page does not take that method"}.get(code, "error")
        return site.message(request, code, text, f"{code}: {text}: {request.url.path}")

    def crash(request: Request, exc: Exception) -> Response:
        return site.crashed(request, exc)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: crash})
    return Guard(app, site.port)
