"""One PNG per comparison: the resolve rate of each side with its 95 % Wilson interval, and
a grid of the paired tasks (a row per task, a column per side) saying resolved or the
failure class.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global
backend), in matplotlib's default style whatever the user's matplotlibrc says (labels
never parsed as mathtext), and saved
without the ``Software`` text chunk: the same comparison gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib import style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from portwright.eval.results import Comparison, Failure, TaskResult, p_text

RESOLVED = "#4c9f70"
"""Cell and bar colour of a resolved task."""
COLOURS: dict[Failure, str] = {
    Failure.BUDGET: "#e8a33d",
    Failure.BOUND: "#b8864b",
    Failure.GATE: "#d1495b",
    Failure.REVIEW: "#8e6cbf",
    Failure.HIDDEN_TESTS: "#6b8fb3",
    Failure.INTEGRITY: "#3d3d3d",
    Failure.ERROR: "#9a9a9a",
}
"""Cell colour per failure class."""
ROW_INCHES = 0.3
"""Height of one task's row; the figure grows with the tasks."""
BARS_INCHES = 4.0
"""Height of the resolve-rate panel (and the least height of the figure)."""
DPI = 100


def write_chart(comparison: Comparison, path: Path) -> Path:
    """Draw ``comparison`` into the PNG ``path``; return ``path``."""
    # text is text: a `$` in a task id or a model name is no mathtext
    with style.context(["default", {"text.parse_math": False}]):
        height = max(BARS_INCHES, 1.6 + ROW_INCHES * len(comparison.pairs))
        figure = Figure(figsize=(11, height), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        # the bars keep their height; the grid grows with the tasks beside them
        layout = figure.add_gridspec(2, 2, width_ratios=(1, 1.6),
                                     height_ratios=(BARS_INCHES, height - BARS_INCHES + 0.01))
        _rates(figure.add_subplot(layout[0, 0]), comparison)
        _grid(figure.add_subplot(layout[:, 1]), comparison)
        figure.savefig(path, format="png", dpi=DPI, metadata={"Software": None})
    return path


def _rates(ax: Axes, comparison: Comparison) -> None:
    sides = (comparison.a, comparison.b)
    rates = [(s.aggregate.resolve_rate or 0.0) * 100 for s in sides]
    below = [rate - s.aggregate.resolve_low * 100 for rate, s in zip(rates, sides, strict=True)]
    above = [s.aggregate.resolve_high * 100 - rate for rate, s in zip(rates, sides,
                                                                        strict=True)]
    ax.bar([0, 1], rates, width=0.6, color=RESOLVED, yerr=[below, above], capsize=8,
           ecolor="#222222")
    for x, (rate, side) in enumerate(zip(rates, sides, strict=True)):
        ax.annotate(f"{side.aggregate.resolved}/{side.aggregate.tasks}", (x, rate),
                    xytext=(12, 4), textcoords="offset points", fontsize=10)
    ax.set_xticks([0, 1], [s.label for s in sides])
    ax.set_xlim(-0.6, 1.6)
    ax.set_ylim(0, 112)  # room for a count above a full bar, below the title
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("tasks resolved (%)")
    ax.set_title("resolve rate, 95 % Wilson interval", fontsize=11)
    table = comparison.table
    ax.set_xlabel(f"McNemar exact p = {p_text(comparison.p_value)} "
                  f"({table.a_only} vs {table.b_only} discordant)", fontsize=9)


def _grid(ax: Axes, comparison: Comparison) -> None:
    pairs = comparison.pairs
    for y, pair in enumerate(pairs):
        for x, result in enumerate((pair.a, pair.b)):
            colour, text = _cell(result)
            ax.add_patch(Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white",
                                   linewidth=1.5))
            ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=8,
                    color="white")
    ax.set_xlim(0, 2)
    ax.set_ylim(max(len(pairs), 1), 0)
    ax.set_xticks([0.5, 1.5], [comparison.a.label, comparison.b.label])
    ax.xaxis.tick_top()
    ax.set_yticks([y + 0.5 for y in range(len(pairs))], [p.task for p in pairs], fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    unpaired = len(comparison.only_a) + len(comparison.only_b)
    title = f"{len(pairs)} paired tasks" + (f" ({unpaired} in one report only, not shown)"
                                            if unpaired else "")
    ax.set_title(title, fontsize=11)


def _cell(result: TaskResult) -> tuple[str, str]:
    if result.resolved or result.failure is None:
        return RESOLVED, "resolved"
    return COLOURS[result.failure], result.failure.value
