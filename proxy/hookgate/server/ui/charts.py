"""Charts the admin UI draws on the server, as SVG: no chart library, nothing to load,
and readable without script (each chart has a title, a description and the same numbers
in a table beside it). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT = 900, 240
LEFT, BOTTOM, TOP = 64, 36, 12


def bars(points: Sequence[tuple[str, float]], *, title: str, unit: str = "$") -> Markup:
    """A bar chart of ``(label, value)`` points in order (days, say), its y axis in
    ``unit``; an empty sequence draws nothing."""
    if not points:
        return Markup("")
    top = max(value for _, value in points) or 1.0
    plot_w, plot_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    step = plot_w / len(points)
    width = max(step * 0.7, 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="chart-title chart-desc" xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<desc id="chart-desc">{len(points)} bars, the highest {escape(_amount(top, unit))}; '
        "the table below has every value.</desc>",
    ]
    for tick in (0.0, 0.5, 1.0):
        y = TOP + plot_h * (1 - tick)
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 8}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c9d1d9"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(_amount(top * tick, unit))}</text>"
        )
    every = max(1, len(points) // 12)  # at most about twelve labels under the axis
    for i, (label, value) in enumerate(points):
        h = plot_h * value / top
        x = LEFT + i * step + (step - width) / 2
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{width:.1f}" '
            f'height="{h:.1f}"><title>{escape(label)}: '
            f"{escape(_amount(value, unit))}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{HEIGHT - BOTTOM + 16}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _amount(value: float, unit: str) -> str:
    if unit == "$":
        return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"
    return f"{value:,.0f} {unit}"
