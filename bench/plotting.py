"""The benchmark plots: one PNG per `plot` spec a benchmark returns (needs matplotlib).

A spec is a dict:

* `kind`: "bar" (grouped bars), "barh" (horizontal bars) or "line";
* `title`, `xlabel`, `ylabel` (with units), `log_y`, `log_x` (line plots);
* `x`: the categories (bar) or the x values (line), `xticklabels` optionally;
* `series`: {name: [value or None per x]};
* `errors` (optional): {name: [[low per x], [high per x]]}, absolute bounds drawn as
  error bars (the benchmarks give the min and max over their rounds);
* `styles` (optional): {name: matplotlib linestyle};
* `bar_colors` (optional, one series): per bar, a contender's name (its colour) or a
  literal "#rrggbb";
* `panels` (optional): a list of {`title`, `series`, `errors`} drawn side by side
  on a shared y axis, instead of the top-level `series`.

**One colour per contender across every plot**: `color_of(name)` gives a series the
colour of the contender its name starts with (`impl-arc 90% pinned` is impl-arc's),
from `COLORS`; other names get a neutral colour of their own, stable across plots.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

__all__ = ["COLORS", "color_of", "draw"]

COLORS: dict[str, str] = {
    "impl-lru": "#1f77b4",
    "vllm-lru": "#7fb8e6",
    "impl-arc": "#d95f02",
    "vllm-arc": "#f5b041",
    "model-lru": "#2ca02c",
    "naive": "#d62728",
    "scanning-arc": "#8c564b",
    "skeleton": "#9467bd",
    "skeleton-split": "#c5b0d5",
    "dict-floor": "#4d4d4d",
    "impl": "#1f77b4",
    "model": "#2ca02c",
}
"""Contender -> colour. `impl` / `model` are the implementation and the model of the
GPU-side benchmarks (free queue, lazy scan): the same colours as impl-lru / model-lru."""

_OTHERS = ("#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#aec7e8", "#98df8a", "#ff9896")


def color_of(name: str) -> str:
    """The colour of the contender `name` starts with (longest match), else a stable one."""
    best = max((c for c in COLORS if name == c or name.startswith(c + " ")), key=len, default="")
    if best:
        return COLORS[best]
    return _OTHERS[zlib.crc32(name.encode()) % len(_OTHERS)]


def _bar_color(entry: str | None) -> str:
    """A `bar_colors` entry: a contender's name, a literal "#rrggbb", or None (gray)."""
    if not entry:
        return "#999999"
    return entry if entry.startswith("#") else color_of(entry)


def _yerr(values: list[Any], bounds: list[list[Any]] | None) -> list[list[float]] | None:
    if not bounds:
        return None
    low, high = bounds
    return [
        [
            0.0 if v is None or lo is None else max(0.0, v - lo)
            for v, lo in zip(values, low, strict=True)
        ],
        [
            0.0 if v is None or hi is None else max(0.0, hi - v)
            for v, hi in zip(values, high, strict=True)
        ],
    ]


def _line(ax: Any, spec: dict[str, Any], series: dict[str, Any], errors: dict[str, Any]) -> None:
    x = list(spec.get("x", []))
    styles = spec.get("styles", {})
    for name, ys in series.items():
        keep = [i for i, y in enumerate(ys) if y is not None]
        xs, vs = [x[i] for i in keep], [ys[i] for i in keep]
        bounds = errors.get(name)
        err = None
        if bounds:
            err = _yerr(vs, [[bounds[0][i] for i in keep], [bounds[1][i] for i in keep]])
        ax.errorbar(
            xs,
            vs,
            yerr=err,
            marker="o",
            markersize=4,
            capsize=3,
            linestyle=styles.get(name, "-"),
            color=color_of(name),
            label=name,
        )
    if spec.get("log_x"):
        ax.set_xscale("log")
    if "xticklabels" in spec:
        ax.set_xticks(x, spec["xticklabels"])
        ax.minorticks_off()


def _bars(ax: Any, spec: dict[str, Any], series: dict[str, Any], errors: dict[str, Any]) -> None:
    kind = spec.get("kind", "bar")
    x = list(spec.get("x", []))
    width = 0.8 / max(1, len(series))
    for i, (name, ys) in enumerate(series.items()):
        pos = [j + (i - (len(series) - 1) / 2) * width for j in range(len(x))]
        vals = [0.0 if v is None else v for v in ys]
        err = _yerr(list(ys), errors.get(name))
        colors: Any = color_of(name)
        if spec.get("bar_colors"):
            colors = [_bar_color(c) for c in spec["bar_colors"]]
        if kind == "barh":
            ax.barh(pos, vals, height=width, xerr=err, capsize=2, color=colors, label=name)
        else:
            ax.bar(pos, vals, width=width, yerr=err, capsize=2, color=colors, label=name)
    ticks = list(range(len(x)))
    if kind == "barh":
        ax.set_yticks(ticks, [str(v) for v in x], fontsize=8)
        ax.invert_yaxis()
    else:
        ax.set_xticks(ticks, [str(v) for v in x], fontsize=8)


def draw(name: str, spec: dict[str, Any], path: Path) -> None:
    """Render one spec to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kind = spec.get("kind", "bar")
    panels = spec.get("panels") or [
        {"title": "", "series": spec.get("series", {}), "errors": spec.get("errors", {})}
    ]
    x = list(spec.get("x", []))
    height = 1.2 + 0.32 * len(x) if kind == "barh" else 4.8
    fig, axes = plt.subplots(
        1, len(panels), figsize=(4.6 * len(panels) + 2.6, height), sharey=True, squeeze=False
    )
    labelled: dict[str, Any] = {}
    for ax, panel in zip(axes[0], panels, strict=True):
        series, errors = dict(panel.get("series", {})), dict(panel.get("errors", {}))
        if kind == "line":
            _line(ax, spec, series, errors)
        else:
            _bars(ax, spec, series, errors)
        if spec.get("log_y"):
            (ax.set_xscale if kind == "barh" else ax.set_yscale)("log")
        if panel.get("title"):
            ax.set_title(str(panel["title"]), fontsize=10)
        ax.set_xlabel(str(spec.get("xlabel", "")))
        ax.grid(True, which="major", axis="x" if kind == "barh" else "both", alpha=0.3)
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            labelled.setdefault(text, handle)
    axes[0][0].set_ylabel(str(spec.get("ylabel", "")))
    fig.suptitle(str(spec.get("title", name)), fontsize=11)
    if len(labelled) > 1 and not spec.get("bar_colors"):
        fig.legend(
            list(labelled.values()),
            list(labelled),
            fontsize=8,
            loc="center left",
            bbox_to_anchor=(1.0, 0.5),
        )
    fig.tight_layout()
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
