"""Server-rendered SVG: a line plot with one marked point per value, and a sparkline.

Numbers only go into the markup (formatted here); the one text that does, the plot's label, is
escaped. No plotting library: a page of 200 loops draws 200 sparklines in well under a
millisecond each.
"""

from __future__ import annotations

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD = 640, 220, 36


def _num(x: float) -> str:
    return f"{x:.1f}"


def line_plot(svg_id: str, points: list[tuple[float, float]], *, label: str, y_min: float = 0.0,
              y_max: float | None = None, y_unit: str = "") -> Markup:
    """An SVG line plot (`<svg id=svg_id>`): `points` are (x, y) in data units (x: the tick
    number), drawn in order with exactly one `<circle class="point">` each, on a y axis from
    `y_min` to `y_max` (default: the largest y, at least y_min + 1e-9). `label` names the plot
    (escaped); `y_unit` is put before the axis figures ("$" for USD)."""
    top = max([y_max if y_max is not None else y_min, *(y for _, y in points)])
    top = top if top > y_min else y_min + 1.0
    xs = [x for x, _ in points]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span_x = (x1 - x0) or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        px = PAD + (x - x0) / span_x * (WIDTH - 2 * PAD) if len(points) > 1 else WIDTH / 2
        py = HEIGHT - PAD - (y - y_min) / (top - y_min) * (HEIGHT - 2 * PAD)
        return px, py

    parts = [f'<svg id="{escape(svg_id)}" class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
             f' aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(label)}</title>",
             f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"'
             ' stroke="currentColor" stroke-opacity="0.4"/>',
             f'<line class="axis" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="currentColor"'
             ' stroke-opacity="0.4"/>']
    for value in (y_min, top):
        _, py = at(x0, value)
        parts.append(f'<text class="tick-label" x="{PAD - 4}" y="{_num(py + 4)}" text-anchor="end"'
                     f' font-size="11" fill="currentColor">{escape(y_unit)}{value:g}</text>')
    if not points:
        parts.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle" fill="currentColor">'
                     "no data yet</text>")
    else:
        coords = [at(x, y) for x, y in points]
        line = " ".join(f"{_num(px)},{_num(py)}" for px, py in coords)
        parts.append(f'<polyline class="line" points="{line}" fill="none" stroke="currentColor" stroke-width="2"/>')
        for (x, y), (px, py) in zip(points, coords, strict=True):
            parts.append(f'<circle class="point" cx="{_num(px)}" cy="{_num(py)}" r="3.5" fill="currentColor">'
                         f"<title>tick {x:g}: {escape(y_unit)}{y:g}</title></circle>")
        parts.append(f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="11" fill="currentColor">tick {x0:g}</text>')
        parts.append(f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end" font-size="11"'
                     f' fill="currentColor">tick {x1:g}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def sparkline(scores: list[float], *, width: int = 120, height: int = 24, last: int = 60) -> Markup:
    """A small inline SVG of the last `last` scores on the fixed 0..1 scale (a flat line at 0.25
    stays flat and low); empty markup when there is no score."""
    shown = scores[-last:]
    if not shown:
        return Markup("")
    step = width / max(1, len(shown) - 1)

    def y(score: float) -> str:
        return _num(height - 2 - min(1.0, max(0.0, score)) * (height - 4))

    pts = " ".join(f"{_num(i * step if len(shown) > 1 else width / 2)},{y(s)}" for i, s in enumerate(shown))
    return Markup(f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
                  f' xmlns="http://www.w3.org/2000/svg" aria-label="scores"><polyline points="{pts}" fill="none"'
                  ' stroke="currentColor" stroke-width="1.5"/></svg>')


def day_bars(svg_id: str, days: list[tuple[str, float]], *, label: str, cap: float | None = None) -> Markup:
    """An SVG bar plot (`<svg id=svg_id>`) of USD per UTC day: `days` are (YYYY-MM-DD, USD),
    oldest first, one `<rect class="bar">` each; `cap` (USD per day, None: none) is drawn as a
    dashed `<line class="cap">`. `label` names the plot (escaped); the day texts are escaped."""
    top = max([cap or 0.0, *(v for _, v in days)]) or 1.0
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    parts = [f'<svg id="{escape(svg_id)}" class="plot" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"'
             f' aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(label)}</title>",
             f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}"'
             ' stroke="currentColor" stroke-opacity="0.4"/>',
             f'<text class="tick-label" x="{PAD - 4}" y="{PAD + 4}" text-anchor="end" font-size="11"'
             f' fill="currentColor">${top:g}</text>']
    if not days:
        parts.append(f'<text x="{WIDTH / 2:.0f}" y="{HEIGHT / 2:.0f}" text-anchor="middle" fill="currentColor">'
                     "no spend yet</text>")
    slot = inner_w / max(1, len(days))
    for i, (day, value) in enumerate(days):
        h = value / top * inner_h
        parts.append(f'<rect class="bar" x="{_num(PAD + i * slot + slot * 0.1)}" y="{_num(HEIGHT - PAD - h)}"'
                     f' width="{_num(slot * 0.8)}" height="{_num(h)}" fill="currentColor" fill-opacity="0.6">'
                     f"<title>{escape(day)}: ${value:.2f}</title></rect>")
    if days:
        parts.append(f'<text x="{PAD}" y="{HEIGHT - 8}" font-size="11" fill="currentColor">{escape(days[0][0])}</text>')
        parts.append(f'<text x="{WIDTH - PAD}" y="{HEIGHT - 8}" text-anchor="end" font-size="11"'
                     f' fill="currentColor">{escape(days[-1][0])}</text>')
    if cap is not None:
        y = HEIGHT - PAD - cap / top * inner_h
        parts.append(f'<line class="cap" x1="{PAD}" y1="{_num(y)}" x2="{WIDTH - PAD}" y2="{_num(y)}"'
                     f' stroke="currentColor" stroke-dasharray="6 4"><title>day cap ${cap:g}</title></line>')
    parts.append("</svg>")
    return Markup("".join(parts))
