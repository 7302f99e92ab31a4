"""`--html` and `--junit`: one self-contained page and one JUnit file per run.

The page is opened in a real browser -- headless Chromium (Debian's `chromium`,
which `.ci/run` installs) -- and its DOM is checked after its script ran: every
record is there, the finding's counterexample is a table of the expected steps, and
the filters and the sort work (they are driven through the address's fragment, as a
link to a filtered view would). A screenshot of the page is kept as a test artifact
in `build/test-artifacts/` (`EVICTABLE_ARTIFACTS` overrides it). Without a browser
that renders a page headless the browser tests are skipped, saying why (and fail
instead when `EVICTABLE_REQUIRE_BROWSER` is set, as `.ci/run` sets it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evictable.proofs.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = "examples.third_party_lru:make_manager"
CHECK = [EXAMPLE, "--preset", "third-party", "--seed", "0", "--examples", "60", "--no-explore"]
ARTIFACTS = Path(os.environ.get("EVICTABLE_ARTIFACTS", ROOT / "build" / "test-artifacts"))


def _browser() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


BROWSER = _browser()
REQUIRED = bool(os.environ.get("EVICTABLE_REQUIRE_BROWSER"))
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _browser_problem(profile: Path) -> str | None:
    """Why no browser test can run here, or None: no chromium, or one that does not
    render a page headless (a stub of a package manager, missing libraries)."""
    if BROWSER is None:
        return "no chromium on this machine (apt-get install chromium; .ci/run installs it)"
    try:
        run = subprocess.run(
            [BROWSER, *HEADLESS, f"--user-data-dir={profile}", "--dump-dom", _PROBE],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,  # a hang backstop for the browser, not a verdict
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{BROWSER} cannot be started: {exc}"
    if run.returncode != 0 or "probe-ok" not in run.stdout:
        last = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return f"{BROWSER} does not render a page headless (exit {run.returncode}): {last}"
    return None


_PROBE = "data:text/html,<p id=p></p><script>p.textContent='probe-ok'</script>"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The browser, checked to render a page; the browser tests are skipped, saying
    why, when there is none that works -- and fail instead when
    `EVICTABLE_REQUIRE_BROWSER` is set (as `.ci/run` sets it)."""
    problem = _browser_problem(tmp_path_factory.mktemp("probe"))
    if problem is not None:
        if REQUIRED:
            pytest.fail(f"EVICTABLE_REQUIRE_BROWSER is set, but {problem}")
        pytest.skip(problem)
    assert BROWSER is not None
    return BROWSER


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("reports")
    here = os.getcwd()
    os.chdir(ROOT)  # the example is imported from the checkout
    check = ["--html", str(out / "check.html"), "--junit", str(out / "check.xml")]
    verify = ["--html", str(out / "verify.html"), "--junit", str(out / "verify.xml")]
    try:
        assert main(["check", *CHECK, *check, "--json", str(out / "check.json")]) == 1
        assert main(["verify", "--quick", "--only", "cpu.hooks", "-j", "0", *verify]) == 0
    finally:
        os.chdir(here)
    return {p.stem + p.suffix: p for p in out.iterdir()}


class _Dom(HTMLParser):
    """The elements of a dumped DOM that the tests look at."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, str | None]] = []
        self.steps: list[dict[str, str | None]] = []
        self.body: dict[str, str | None] = {}
        self.shown = ""
        self._in_shown = False
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        classes = (a.get("class") or "").split()
        if tag == "tr" and "record" in classes:
            self.records.append(a)
        if tag == "tr" and "step" in classes:
            self.steps.append(a)
        if tag == "body":
            self.body = a
        self._in_shown = tag == "span" and a.get("id") == "shown"

    def handle_data(self, data: str) -> None:
        if self._in_shown:
            self.shown += data

    def handle_endtag(self, tag: str) -> None:
        self._in_shown = False


def _chromium(tmp_path: Path, *args: str) -> str:
    assert BROWSER is not None
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    run = subprocess.run(
        [
            BROWSER,
            *HEADLESS,
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,  # a hang backstop for the browser, not a verdict
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


def _dom(tmp_path: Path, page: Path, fragment: str = "") -> _Dom:
    dom = _Dom()
    dom.feed(_chromium(tmp_path, "--dump-dom", page.as_uri() + fragment))
    assert dom.body.get("data-ready") == "1", "the page's script did not run"
    return dom


def test_the_html_page_is_self_contained(reports: dict[str, Path]) -> None:
    for name in ("check.html", "verify.html"):
        text = reports[name].read_text(encoding="utf-8")
        assert "<script src" not in text and "<link" not in text and "@import" not in text
        # the one URL is the SVG namespace, which is a name, never fetched
        assert set(re.findall(r"https?://[^\s\"'<>)]+", text)) <= {"http://www.w3.org/2000/svg"}
        assert text.count("<svg") == 2  # the CPU and GPU lifecycles, inline


def test_the_junit_file_has_one_test_case_per_record(reports: dict[str, Path]) -> None:
    check = ET.parse(reports["check.xml"]).getroot()
    cases = check.findall(".//testcase")
    assert [c.get("name") for c in cases] == [
        "finding 1: pinned or protected block evicted",
        "manager: conformance engine",
    ]
    suite = check.find("testsuite")
    assert suite is not None and suite.get("failures") == "1"  # one bug, one failure
    assert cases[1].find("failure") is None  # the engine that found it names it instead
    out = cases[1].find("system-out")
    assert out is not None and "finding 1: pinned or protected block evicted" in (out.text or "")
    failure = cases[0].find("failure")
    assert failure is not None and failure.text is not None
    assert "evicted b'k3' while it is LOADING" in (failure.get("message") or "")
    assert "m.prepare_load(" in failure.text and "reproduce: evictable check" in failure.text
    verify = ET.parse(reports["verify.xml"]).getroot()
    suite = verify.find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    names = [c.get("name") for c in verify.findall(".//testcase")]
    assert len(names) == int(suite.get("tests") or 0) > 10
    assert all(c.find("failure") is None for c in verify.findall(".//testcase"))


def test_chromium_shows_every_record_and_the_steps_of_the_finding(
    browser: str, reports: dict[str, Path], tmp_path: Path
) -> None:
    dom = _dom(tmp_path, reports["check.html"])
    assert [r["data-name"] for r in dom.records] == [
        "finding 1: pinned or protected block evicted",
        "manager: conformance engine",
    ]
    assert all(r.get("hidden") is None for r in dom.records)
    ops = [s["data-op"] for s in dom.steps]
    assert ops[0] == "construct" and ops[-1] == "prepare_store" and "prepare_load" in ops
    assert "diverges" in (dom.steps[-1].get("class") or "")
    assert dom.shown == "2 of 2 records shown"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "check-report.png"
    _chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1280,1800", reports["check.html"].as_uri()
    )
    assert shot.stat().st_size > 10_000


def test_chromium_filters_by_kind_and_verdict(
    browser: str, reports: dict[str, Path], tmp_path: Path
) -> None:
    dom = _dom(tmp_path, reports["check.html"], "#kind=finding")
    shown = [r["data-name"] for r in dom.records if r.get("hidden") is None]
    assert shown == ["finding 1: pinned or protected block evicted"]
    assert dom.shown == "1 of 2 records shown"
    verify = _dom(tmp_path, reports["verify.html"], "#verdict=refuted")
    visible = [r for r in verify.records if r.get("hidden") is None]
    assert visible and all(r["data-verdict"] == "refuted" for r in visible)
    assert len(visible) < len(verify.records)
    assert all(
        r["data-verdict"] != "refuted" for r in verify.records if r.get("hidden") is not None
    )


def test_chromium_sorts_by_a_column(browser: str, reports: dict[str, Path], tmp_path: Path) -> None:
    dom = _dom(tmp_path, reports["verify.html"], "#sort=seconds&dir=desc")
    seconds = [float(r["data-seconds"] or 0) for r in dom.records]
    assert seconds == sorted(seconds, reverse=True)
    by_name = _dom(tmp_path, reports["verify.html"], "#sort=name")
    names = [r["data-name"] or "" for r in by_name.records]
    assert names == sorted(names, key=lambda n: n.lower()) or names == sorted(names)


def test_a_check_that_could_not_run_still_writes_its_pages(tmp_path: Path) -> None:
    page, junit = tmp_path / "p.html", tmp_path / "j.xml"
    code = main(["check", "no_such_module:make", "--html", str(page), "--junit", str(junit)])
    assert code == 2
    assert "could not run" in page.read_text(encoding="utf-8")
    error = ET.parse(junit).getroot().find(".//testcase/error")
    assert error is not None and "no_such_module" in (error.get("message") or "")


def test_the_diverging_step_shows_the_expected_state_beside_the_observed(tmp_path: Path) -> None:
    page = tmp_path / "drift.html"
    here = os.getcwd()
    os.chdir(ROOT)
    try:
        spec = "tests.proofs.check.hostile:listed_while_loading"
        assert main(["check", spec, *CHECK[1:], "--html", str(page)]) == 1
    finally:
        os.chdir(here)
    text = page.read_text(encoding="utf-8")
    first = text.index("finding 1: pinned or protected block evicted")
    assert first < text.index("manager: conformance engine")  # the finding comes first
    # the first divergence (the counters after the load), expected beside observed
    assert "<table class='compare'>" in text
    row = re.search(
        r"<tr class='differs'><td>([^<]*)</td><td class='expected'>([^<]*)</td>"
        r"<td class='observed'>([^<]*)</td></tr>",
        text,
    )
    assert row is not None and row.groups() == ("counters", "[0, 0]", "[1, 0]"), row
    # the consequence: the model's answer beside the store's, highlighted
    assert text.count("<tr class='step diverges'") == 2
    assert "<td class='expected'>-&gt; null</td>" in text
