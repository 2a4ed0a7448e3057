"""SVG line and grouped-bar charts for the benchmark docs, drawn as plain SVG text.

Pure functions, no plotting library: data in, an SVG document out. Titles, ticks, labels and
the legend are ``<text>`` elements, so a chart stays readable as text and diffs line by line.
Output is deterministic (fixed number formatting, no timestamps): the same report gives the
same bytes. Text widths are estimated from the font size, which is enough to lay out a legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

#: Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000")
WIDTH, HEIGHT = 760, 440
FONT = 12
TITLE_FONT = 16
SMALL_FONT = 11
INK, GRID, MUTED = "#222222", "#e3e3e3", "#555555"


@dataclass(frozen=True)
class Series:
    """One line (a y per x) or one bar per category; ``None`` leaves a gap."""

    name: str
    values: tuple[float | None, ...]
    color: int = 0
    dashed: bool = False


@dataclass(frozen=True)
class Axis:
    lo: float
    hi: float
    ticks: tuple[float, ...]
    log: bool = False

    def scale(self, value: float, start: float, end: float) -> float:
        """The pixel of ``value`` between ``start`` (at ``lo``) and ``end`` (at ``hi``)."""
        if self.log:
            lo, hi, v = math.log10(self.lo), math.log10(self.hi), math.log10(value)
        else:
            lo, hi, v = self.lo, self.hi, value
        return start + (v - lo) / (hi - lo) * (end - start)


def nice_step(span: float, count: int = 5) -> float:
    """A tick step of 1, 2, 2.5 or 5 times a power of ten giving about ``count`` intervals."""
    raw = span / count
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)


def value_axis(values: Sequence[float], headroom: float = 0.0, count: int = 5) -> Axis:
    """A linear axis from zero (or below, for negative data) that holds every value."""
    lo, hi = min([0.0, *values]), max([0.0, *values])
    hi += (hi - lo) * headroom
    if hi == lo:
        hi = lo + 1.0
    step = nice_step(hi - lo, count)
    start, stop = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    ticks = tuple(round(i * step, 10) for i in range(start, stop + 1))
    return Axis(ticks[0], ticks[-1], ticks)


def point_axis(xs: Sequence[float], log: bool) -> Axis:
    """An x axis ticked at the measured points, padded so the outer points clear the frame."""
    lo, hi = min(xs), max(xs)
    if log:
        pad = (math.log10(hi) - math.log10(lo)) * 0.06 or 0.5
        return Axis(lo / 10**pad, hi * 10**pad, tuple(sorted(set(xs))), log=True)
    pad = (hi - lo) * 0.06 or 1.0
    return Axis(lo - pad, hi + pad, tuple(sorted(set(xs))))


def number(value: float, digits: int | None = None) -> str:
    """``1,000``, ``0.25``, ``12.5``: thousands separators, no float noise, a fixed ``digits`` if given."""
    if digits is not None:
        return f"{value:,.{digits}f}"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.6f}".rstrip("0").rstrip(".")


def text_width(text: str, size: int = FONT) -> float:
    """Estimated width of ``text`` in a sans-serif font (average glyph ~0.58 em)."""
    return len(text) * size * 0.58


def _text(x: float, y: float, body: str, size: int = FONT, anchor: str = "start", **attrs: str) -> str:
    extra = "".join(f" {k.replace('_', '-')}={quoteattr(v)}" for k, v in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"{extra}>{escape(body)}</text>'


def _color(series: Series) -> str:
    return PALETTE[series.color % len(PALETTE)]


def _stroke(series: Series) -> str:
    dash = ' stroke-dasharray="7 4"' if series.dashed else ""
    return f'stroke="{_color(series)}" stroke-width="2"{dash}'


@dataclass(frozen=True)
class Key:
    """One legend entry: a colour swatch (``box``) or a line sample, solid or dashed."""

    name: str
    color: str
    dashed: bool = False
    box: bool = False


@dataclass(frozen=True)
class _Frame:
    """The plot rectangle and the header drawn above it (title, subtitle, legend)."""

    left: float
    top: float
    right: float
    bottom: float
    header: list[str]


def _key(x: float, y: float, key: Key) -> list[str]:
    if key.box:
        sample = f'<rect x="{x + 4:.1f}" y="{y - 10:.1f}" width="14" height="12" fill="{key.color}"/>'
    else:
        dash = ' stroke-dasharray="7 4"' if key.dashed else ""
        sample = (
            f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 22:.1f}" y2="{y - 4:.1f}" '
            f'stroke="{key.color}" stroke-width="2"{dash}/>'
        )
    return [sample, _text(x + 28, y, key.name, SMALL_FONT, fill=INK)]


def _frame(title: str, subtitle: str, legend: Sequence[Sequence[Key]], y_axis: Axis, bottom_lines: int) -> _Frame:
    """Title, subtitle and a legend in equal columns, each group of keys from a new row; the plot takes the rest."""
    parts = [_text(16, 26, title, TITLE_FONT, font_weight="bold", fill=INK)]
    y = 26.0
    if subtitle:
        y += 18
        parts.append(_text(16, y, subtitle, SMALL_FONT, fill=MUTED))
    tick_width = max(text_width(number(t), SMALL_FONT) for t in y_axis.ticks)
    left = 16 + FONT + 10 + tick_width + 8
    y += 6
    keys = [k for group in legend for k in group]
    column = max((28 + text_width(k.name, SMALL_FONT) + 24 for k in keys), default=0.0)
    columns = max(1, int((WIDTH - 20 - left) // column)) if keys else 1
    for group in legend:
        for i, key in enumerate(group):
            if i % columns == 0:
                y += 18
            parts += _key(left + column * (i % columns), y, key)
    bottom = HEIGHT - 28 - SMALL_FONT * bottom_lines - 8
    return _Frame(left, y + 16, WIDTH - 24, bottom, parts)


def _axes(f: _Frame, y_axis: Axis, y_label: str, x_label: str) -> list[str]:
    """Grid lines and labels of the y ticks, both axis titles, and the frame of the plot."""
    out = [f'<g stroke="{GRID}" stroke-width="1">']
    for t in y_axis.ticks:
        y = y_axis.scale(t, f.bottom, f.top)
        out.append(f'<line x1="{f.left:.1f}" y1="{y:.1f}" x2="{f.right:.1f}" y2="{y:.1f}"/>')
    out.append("</g>")
    for t in y_axis.ticks:
        y = y_axis.scale(t, f.bottom, f.top)
        out.append(_text(f.left - 6, y + 4, number(t), SMALL_FONT, "end", fill=MUTED))
    mid = (f.top + f.bottom) / 2
    out.append(
        f'<text x="{16 + FONT:.1f}" y="{mid:.1f}" font-size="{FONT}" text-anchor="middle" fill="{INK}" '
        f'transform="rotate(-90 {16 + FONT:.1f} {mid:.1f})">{escape(y_label)}</text>'
    )
    if x_label:
        out.append(_text((f.left + f.right) / 2, HEIGHT - 14, x_label, FONT, "middle", fill=INK))
    width, height = f.right - f.left, f.bottom - f.top
    out.append(
        f'<rect class="plot" x="{f.left:.1f}" y="{f.top:.1f}" width="{width:.1f}" height="{height:.1f}" '
        f'fill="none" stroke="{MUTED}" stroke-width="1"/>'
    )
    return out


def _document(title: str, parts: Sequence[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'font-family="Helvetica, Arial, sans-serif" role="img">'
    )
    body = [head, f"<title>{escape(title)}</title>", f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
    return "\n".join([*body, *parts, "</svg>"]) + "\n"


def line_chart(
    title: str,
    xs: Sequence[float],
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    subtitle: str = "",
    log_x: bool = False,
    x_tick_labels: Sequence[str] | None = None,
    line_styles: Sequence[tuple[str, bool]] = (),
) -> str:
    """Lines through (x, y) points, with a dot at each measured point and x ticked at the points.

    Series sharing a name share one legend entry (their colour); ``line_styles`` adds entries
    saying what solid and dashed lines are, e.g. ``(("p50", False), ("p99", True))``.
    """
    values = [v for s in series for v in s.values if v is not None]
    y_axis = value_axis(values, headroom=0.04)
    x_axis = point_axis(xs, log_x)
    names = dict.fromkeys(s.name for s in series)
    keys = [Key(n, _color(next(s for s in series if s.name == n))) for n in names]
    styles = [Key(name, MUTED, dashed) for name, dashed in line_styles]
    f = _frame(title, subtitle, [keys, styles], y_axis, 1)
    parts = [*f.header, *_axes(f, y_axis, y_label, x_label)]
    labels = list(x_tick_labels) if x_tick_labels else [number(x) for x in x_axis.ticks]
    for x, label in zip(x_axis.ticks, labels, strict=True):
        px = x_axis.scale(x, f.left, f.right)
        parts.append(
            f'<line x1="{px:.1f}" y1="{f.bottom:.1f}" x2="{px:.1f}" y2="{f.bottom + 5:.1f}" stroke="{MUTED}"/>'
        )
        parts.append(_text(px, f.bottom + 19, label, SMALL_FONT, "middle", fill=MUTED))
    style = {dashed: name for name, dashed in line_styles}
    at = dict(zip(x_axis.ticks, labels, strict=True))
    for s in series:
        name = f"{s.name} {style[s.dashed]}" if s.dashed in style else s.name
        points = [(x, v) for x, v in zip(xs, s.values, strict=True) if v is not None]
        pixels = [(x_axis.scale(x, f.left, f.right), y_axis.scale(v, f.bottom, f.top)) for x, v in points]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pixels)
        parts.append(f'<polyline points="{path}" fill="none" {_stroke(s)}><title>{escape(name)}</title></polyline>')
        parts += [
            f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{_color(s)}">'
            f"<title>{escape(f'{name} at {at[x]}: {number(v)}')}</title></circle>"
            for (px, py), (x, v) in zip(pixels, points, strict=True)
        ]
    return _document(title, parts)


def bar_chart(
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    *,
    y_label: str,
    x_label: str = "",
    subtitle: str = "",
    value_digits: int = 2,
    reference: float | None = None,
    reference_label: str = "",
) -> str:
    """Grouped bars, one group per category (``\\n`` breaks a label), each bar labelled with its value."""
    values = [v for s in series for v in s.values if v is not None] + ([reference] if reference is not None else [])
    y_axis = value_axis(values, headroom=0.1)
    lines = max(c.count("\n") + 1 for c in categories)
    keys = [Key(s.name, _color(s), box=True) for s in series]
    marks = [Key(reference_label, INK, dashed=True)] if reference is not None and reference_label else []
    f = _frame(title, subtitle, [keys, marks], y_axis, lines)
    parts = [*f.header, *_axes(f, y_axis, y_label, x_label)]
    slot = (f.right - f.left) / len(categories)
    bar = slot * 0.78 / len(series)
    zero = y_axis.scale(0.0, f.bottom, f.top)
    if reference is not None:
        y = y_axis.scale(reference, f.bottom, f.top)
        parts.append(
            f'<line x1="{f.left:.1f}" y1="{y:.1f}" x2="{f.right:.1f}" y2="{y:.1f}" stroke="{INK}" '
            'stroke-width="2" stroke-dasharray="7 4"/>'
        )
    for i, category in enumerate(categories):
        centre = f.left + slot * (i + 0.5)
        for j, line in enumerate(category.split("\n")):
            parts.append(_text(centre, f.bottom + 17 + j * (SMALL_FONT + 3), line, SMALL_FONT, "middle", fill=INK))
        for k, s in enumerate(series):
            v = s.values[i]
            if v is None:
                continue
            x = centre - bar * len(series) / 2 + bar * k
            top = y_axis.scale(v, f.bottom, f.top)
            y, h = min(top, zero), abs(zero - top)
            color = _color(s)
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{escape(f'{s.name}, {category}: {number(v, value_digits)}'.replace(chr(10), ' '))}</title>"
                "</rect>"
            )
            label_y = top - 4 if v >= 0 else top + SMALL_FONT + 2
            halo = {"stroke": "#ffffff", "stroke_width": "3", "paint_order": "stroke"}
            parts.append(_text(x + bar / 2, label_y, number(v, value_digits), 10, "middle", fill=INK, **halo))
    return _document(title, parts)
