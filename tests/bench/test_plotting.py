"""One colour per contender across every plot, and specs with panels, error bars and
missing values draw."""

from __future__ import annotations

from pathlib import Path

from bench.plotting import COLORS, color_of, draw


def test_a_series_takes_the_colour_of_its_contender() -> None:
    assert color_of("impl-arc") == color_of("impl-arc 90% pinned") == COLORS["impl-arc"]
    assert color_of("impl-lru") != color_of("impl-arc")
    assert color_of("vllm-arc") == COLORS["vllm-arc"]


def test_an_unknown_series_gets_a_stable_colour() -> None:
    assert color_of("hand-written generator") == color_of("hand-written generator")


def test_draws_panels_with_error_bars_and_gaps(tmp_path: Path) -> None:
    spec = {
        "kind": "line",
        "title": "t",
        "xlabel": "blocks",
        "ylabel": "ops/s",
        "log_x": True,
        "log_y": True,
        "x": [1024, 65536],
        "xticklabels": ["1K", "64K"],
        "panels": [
            {
                "title": "0%",
                "series": {"impl-lru": [2.0, 1.0], "model-lru": [1.0, None]},
                "errors": {"impl-lru": [[1.5, 0.9], [2.5, 1.1]]},
            },
            {"title": "90%", "series": {"impl-lru": [2.0, 1.5]}, "errors": {}},
        ],
    }
    draw("t", spec, tmp_path / "t.png")
    bars = {
        "kind": "bar",
        "x": ["a", "b"],
        "series": {"impl": [1.0, 2.0], "model": [0.5, None]},
        "errors": {"impl": [[0.9, 1.8], [1.1, 2.2]]},
        "log_y": True,
    }
    draw("b", bars, tmp_path / "b.png")
    assert (tmp_path / "t.png").stat().st_size > 0 and (tmp_path / "b.png").stat().st_size > 0
