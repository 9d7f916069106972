"""`automaton --dashboard`: a local web page over the loops and tasks of one or more projects.

Read-only unless the human who started it logs in with the one-time URL it printed; then the
page can approve a halted loop, pause and resume a loop, and sign off a task, through the same
use cases as the CLI (`commands/`), logged `by=<OS user> via=dashboard`. `server.py` starts it,
`app.py` routes, `auth.py` holds the secret and the sessions, `guard.py` the Host/Origin checks,
`views.py` and `ticks.py` gather what a page shows, `plots.py` draws the SVG, `actions.py` acts.

Nothing imports this package but `automaton.cli` (import-linter), and the CLI imports it only
for `--dashboard`: starlette, uvicorn and jinja2 stay off every other path.
"""
