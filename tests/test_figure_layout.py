"""The one figure layout (`analysis.core.figure_layout.tidy`): title, legend, subplot titles and colour bars in bands
that cannot meet, on the two figures that overlapped on a fresh install (issue 47) and on the plain cases."""

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.core.figure_layout import (
    ASSUMED_WIDTH,
    COLORBAR_ROOM,
    LEGEND_ROW,
    SUBPLOT_TITLE_BAND,
    TITLE_BAND,
    tidy,
)


def _sensitivity_like():
    """The Sensitivity view's shape: a title, a legend the page put at y=1.08 (over the title), two subplot titles."""
    fig = make_subplots(rows=2, cols=1, subplot_titles=("measured", "bound"))
    for name in ("last token", "mean"):
        fig.add_trace(go.Scatter(x=[0, 1], y=[1, 2], name=name), 1, 1)
        fig.add_trace(go.Scatter(x=[0, 1], y=[1, 2], name=f"exact, {name}"), 1, 1)
    fig.update_layout(title="Sensitivity of mean", height=640, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=1.08))
    return fig


def test_the_title_the_legend_and_the_subplot_titles_each_get_their_own_band():
    fig = tidy(_sensitivity_like())
    height = fig.layout.height
    title_bottom = TITLE_BAND  # px from the top of the figure
    legend_top = (1 - fig.layout.legend.y) * height
    assert fig.layout.legend.yref == "container" and fig.layout.legend.yanchor == "top"
    assert legend_top >= title_bottom - 1  # the legend starts below the title
    legend_bottom = legend_top + LEGEND_ROW  # four short entries: one row at the assumed width
    assert fig.layout.margin.t >= legend_bottom + SUBPLOT_TITLE_BAND  # the subplot titles fit between it and the plot
    assert fig.layout.title.yref == "container" and fig.layout.title.y == 1.0


def test_a_long_legend_gets_more_rows_and_the_top_margin_grows_with_them():
    short, long_ = go.Figure(), go.Figure()
    for i in range(2):
        short.add_trace(go.Scatter(x=[0], y=[i], name=f"m{i}"))
    for i in range(12):
        long_.add_trace(go.Scatter(x=[0], y=[i], name=f"a method with a long name {i}"))
    assert tidy(long_).layout.margin.t >= tidy(short).layout.margin.t + 2 * LEGEND_ROW


def test_a_colour_bar_between_subplots_moves_its_neighbour_instead_of_covering_its_axis_title():
    """The Attention view's shape: a heatmap in the left column with its colour bar, a profile with a y-axis title."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.35, 0.65], horizontal_spacing=0.08)
    fig.add_trace(go.Heatmap(z=[[0, 1], [1, 0]], colorbar=dict(title="mass", x=0.3)), 1, 1)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1]), 1, 2)
    fig.update_yaxes(title_text="mass on the prefix", row=1, col=2)
    tidy(fig)
    left_end = fig.layout.xaxis.domain[1]
    bar = fig.data[0].colorbar
    assert bar.x == left_end and bar.xanchor == "left"  # beside its own subplot, not inside it
    assert fig.layout.xaxis2.domain[0] >= left_end + COLORBAR_ROOM / ASSUMED_WIDTH - 1e-9


def test_a_single_trace_and_a_hidden_legend_leave_no_legend_band():
    one = tidy(go.Figure(go.Scatter(x=[0], y=[0], name="only")))
    hidden = go.Figure([go.Scatter(x=[0], y=[0], name="a"), go.Scatter(x=[0], y=[1], name="b")])
    hidden.update_layout(showlegend=False)
    assert one.layout.margin.t == tidy(hidden).layout.margin.t == 30


def test_a_titled_figure_without_legend_reserves_the_title_band_only():
    fig = tidy(go.Figure(go.Bar(x=["a"], y=[1]), layout=dict(title="t")))
    assert fig.layout.margin.t == TITLE_BAND + 10
