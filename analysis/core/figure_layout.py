"""One layout for every figure (pages, lessons, the report, the claims board, downloads), so labels never overlap.

Pages built their figures' titles, legends and colour bars by hand, each with its own offsets, and on a fresh
install the Attention view's colour bar sat over its neighbour's axis title and the Sensitivity view's legend over
its title (issue 47). `tidy(fig)` lays out what a figure holds in bands that cannot meet, whatever the page asked:

    ┌ title band ─────────── the figure's title, at the top of the figure
    ├ legend band ────────── a horizontal legend, as many rows as its entries need
    ├ subplot-title band ─── the subplots' titles, just above the plot area
    │ plot area              colour bars beside their own subplot, the next subplot moved right to make room
    └ axes ───────────────── tick labels and axis titles in margins Plotly grows to fit (automargin)

    fig = tidy(fig)    # in place; returns the figure

Sizes are in pixels of a figure `ASSUMED_WIDTH` wide (Streamlit stretches figures to the column; the legend's rows
are estimated for that width and rounded up, so a wider page only leaves spare room).
"""

from __future__ import annotations

import math

ASSUMED_WIDTH = 700  # px: a figure in the main column of a wide page, the narrowest it is drawn at
DEFAULT_HEIGHT = 450  # px: Plotly's own default
TITLE_BAND = 34  # px: one line of title at Plotly's default 17 px font, with its padding
LEGEND_ROW = 22  # px: one row of a horizontal legend
SUBPLOT_TITLE_BAND = 24  # px: one line of subplot title at 16 px
COLORBAR_ROOM = 80  # px: a vertical colour bar with its tick labels and title, beside its subplot
CHAR = 7.0  # px: the mean width of a legend character at 12 px
LEGEND_ITEM = 44  # px: a legend entry's symbol and spacing


def tidy(fig):
    """Lay out `fig` (a plotly Figure) in non-overlapping bands: title, legend, subplot titles, plot area; colour
    bars beside their subplots; axes that grow their margins to fit their labels. Returns `fig`."""
    layout = fig.layout
    height = layout.height or DEFAULT_HEIGHT
    title = bool(layout.title and layout.title.text)
    legend_rows = _legend_rows(fig)
    subplot_titles = any(_is_subplot_title(a) for a in layout.annotations or ())
    top = (TITLE_BAND if title else 0) + legend_rows * LEGEND_ROW + (SUBPLOT_TITLE_BAND if subplot_titles else 0)
    margin = layout.margin
    fig.update_layout(margin={"t": max(top + 10, 30), "l": margin.l if margin.l is not None else 10,
                              "r": margin.r if margin.r is not None else 10,
                              "b": margin.b if margin.b is not None else 10})
    if title:
        fig.update_layout(title={"yref": "container", "y": 1.0, "yanchor": "top", "pad": {"t": 10},
                                 "x": 0.0, "xanchor": "left", "xref": "paper"})
    if legend_rows:
        fig.update_layout(legend={"orientation": "h", "yref": "container", "xref": "paper", "x": 0.0,
                                  "xanchor": "left", "y": 1.0 - ((TITLE_BAND if title else 4) / height),
                                  "yanchor": "top"})
    _place_colorbars(fig)
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True, title_standoff=6)
    return fig


def _legend_rows(fig) -> int:
    """How many rows the horizontal legend needs at `ASSUMED_WIDTH` (0: no legend is drawn)."""
    if fig.layout.showlegend is False:
        return 0
    names = [t.name for t in fig.data if t.name and t.showlegend is not False]
    if len(names) < 2 and fig.layout.showlegend is not True:  # Plotly shows no legend for a single trace
        return 0
    width = sum(len(str(n)) * CHAR + LEGEND_ITEM for n in dict.fromkeys(names))
    return max(1, math.ceil(width / ASSUMED_WIDTH)) if names else 0


def _is_subplot_title(annotation) -> bool:
    """make_subplots writes its titles as paper-referenced annotations anchored at the bottom of a y position at or
    just above a subplot's top."""
    return annotation.yref == "paper" and annotation.yanchor == "bottom" and (annotation.y or 0) > 0.5


def _place_colorbars(fig) -> None:
    """Each colour bar vertical, just right of its own subplot; a subplot that starts within `COLORBAR_ROOM` of it
    moves right, so the bar never covers its neighbour's axis title or ticks."""
    width = ASSUMED_WIDTH
    for trace in fig.data:
        bar = getattr(trace, "colorbar", None)
        if bar is None or getattr(trace, "showscale", None) is False or not hasattr(trace, "xaxis"):
            continue
        xaxis = fig.layout[_axis_name("x", trace.xaxis)]
        right = (xaxis.domain or (0, 1))[1]
        if right >= 0.98:  # the rightmost column: Plotly's own place, which grows the right margin
            trace.update(colorbar={"x": 1.0, "xanchor": "left", "xpad": 6, "thickness": 12})
            continue
        trace.update(colorbar={"x": right, "xanchor": "left", "xpad": 6, "thickness": 12, "len": 1.0})
        need = right + COLORBAR_ROOM / width
        for name in [k for k in fig.layout if k.startswith("xaxis")]:
            axis = fig.layout[name]
            start, end = axis.domain or (0, 1)
            if right <= start < need:
                axis.domain = (min(need, end - 0.05), end)


def _axis_name(letter: str, ref: str | None) -> str:
    """'x2' -> 'xaxis2', 'x' or None -> 'xaxis'."""
    suffix = (ref or letter)[1:]
    return f"{letter}axis{suffix}"
