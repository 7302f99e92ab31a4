"""`--html PATH`: a report as one self-contained page, to put in front of a reviewer.

`render_html(doc)` turns a JSON report (`cli.report`) into one HTML file that needs
no network to view: its style, its script and its diagrams are inline (no CDN, no
font, no image file). It shows

* what ran: the command, its exit code and verdict, the tool's version and commit,
  the contract, the bounds, the seed and the command that reproduces the run;
* the records (`cli.entries`), in a table that can be filtered by kind and by
  verdict and sorted by any column (click its heading); the filters and the sort are
  kept in the address's fragment (`#kind=finding&verdict=safety&sort=seconds&dir=desc`),
  so a link shows the same view;
* every counterexample as a table of steps -- the call, its result or error, the
  model's answer, and the state change after it -- with the runnable snippet; the
  step that diverges is highlighted, its result beside the model's and, where the
  state after it differs, the model's state beside the one observed, field by field
  (`_compared`); the findings come first, then the engine records that found them;
* the lifecycle diagrams as inline SVG, drawn from the table (`docgen.svg`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from evictable.model.lifecycle import CPU_MACHINE, GPU_MACHINE
from evictable.proofs.base.trace import show
from evictable.proofs.cli.docgen import svg
from evictable.proofs.cli.entries import Entry, entries, reproduce

__all__ = ["render_html", "step_answer"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1b1f24;background:#fafbfc}
header,section{padding:12px 28px}header{background:#fff;border-bottom:1px solid #d8dee4}
h1{font-size:22px;margin:6px 0}h2{font-size:17px;margin:18px 0 8px}
.ok{color:#116329}.bad{color:#a40e26}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:8px 0}
dl.facts dt{color:#57606a}dl.facts dd{margin:0}
code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#f3f5f7;padding:8px;
overflow-x:auto;border-radius:4px;white-space:pre-wrap}
table{border-collapse:collapse;background:#fff}
#records-table{width:100%}#records-table th,#records-table td{border-bottom:1px solid #e4e8ec;
padding:5px 8px;text-align:left;vertical-align:top}
#records-table th{cursor:pointer;user-select:none;background:#f0f3f6;position:sticky;top:0}
#records-table th[aria-sort=ascending]::after{content:" \\25B2"}
#records-table th[aria-sort=descending]::after{content:" \\25BC"}
tr.record.failed>td:first-child{border-left:4px solid #cf222e}
tr.record.passed>td:first-child{border-left:4px solid #2da44e}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.filters{display:flex;gap:18px;align-items:center;margin:6px 0 10px}
table.steps{margin:6px 0;font-size:12px}table.steps th,table.steps td{border:1px solid #d8dee4;
padding:3px 6px;vertical-align:top}table.steps th{background:#f0f3f6}
tr.step.diverges td{background:#ffebe9}ul.changes{margin:0;padding-left:16px}
tr.step.diverges td.expected,table.compare td.expected{background:#dafbe1;font-weight:600}
tr.step.diverges td.observed,table.compare td.observed{background:#ffcecb;font-weight:600}
table.compare{margin:4px 0;font-size:12px}table.compare td,table.compare th{border:1px solid
#d8dee4;padding:2px 6px}
.reason{margin:4px 0;font-weight:600}details summary{cursor:pointer;color:#0550ae}
.diagrams{display:flex;flex-wrap:wrap;gap:16px}
.diagrams figure{margin:0;background:#fff;border:1px solid #d8dee4}
figcaption{padding:4px 8px;color:#57606a}
"""

_SCRIPT = """
(function () {
  var table = document.getElementById('records-table');
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.querySelectorAll('tr.record'));
  var kind = document.getElementById('filter-kind');
  var verdict = document.getElementById('filter-verdict');
  var shown = document.getElementById('shown');
  var sortKey = null, sortDir = 'asc';
  function params() {
    var out = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (part) {
      var kv = part.split('=');
      if (kv[0]) { out[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1] || ''); }
    });
    return out;
  }
  function save() {
    var p = [];
    if (kind.value !== 'all') { p.push('kind=' + encodeURIComponent(kind.value)); }
    if (verdict.value !== 'all') { p.push('verdict=' + encodeURIComponent(verdict.value)); }
    if (sortKey) { p.push('sort=' + sortKey, 'dir=' + sortDir); }
    try { history.replaceState(null, '', p.length ? '#' + p.join('&') : location.pathname); }
    catch (e) { /* a page opened from a file may refuse: the view still applies */ }
  }
  function filter() {
    var n = 0;
    rows.forEach(function (row) {
      var show = (kind.value === 'all' || row.dataset.kind === kind.value) &&
                 (verdict.value === 'all' || row.dataset.verdict === verdict.value);
      row.hidden = !show;
      if (show) { n += 1; }
    });
    shown.textContent = n + ' of ' + rows.length + ' records shown';
    document.body.dataset.shown = String(n);
  }
  function sort(key, dir) {
    var th = table.querySelector('th[data-sort="' + key + '"]');
    if (!th) { return; }
    var numeric = th.hasAttribute('data-numeric');
    rows.sort(function (a, b) {
      var x = a.dataset[key] || '', y = b.dataset[key] || '';
      var c = numeric ? (parseFloat(x) - parseFloat(y)) : x.localeCompare(y);
      if (c === 0) { c = parseInt(a.dataset.index, 10) - parseInt(b.dataset.index, 10); }
      return dir === 'desc' ? -c : c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.querySelectorAll('th'), function (h) {
      h.removeAttribute('aria-sort');
    });
    th.setAttribute('aria-sort', dir === 'desc' ? 'descending' : 'ascending');
    sortKey = key; sortDir = dir;
  }
  function choose(select, value) {
    for (var i = 0; i < select.options.length; i += 1) {
      if (select.options[i].value === value) { select.value = value; return; }
    }
  }
  kind.addEventListener('change', function () { filter(); save(); });
  verdict.addEventListener('change', function () { filter(); save(); });
  Array.prototype.forEach.call(table.querySelectorAll('th[data-sort]'), function (th) {
    th.addEventListener('click', function () {
      var key = th.dataset.sort;
      sort(key, sortKey === key && sortDir === 'asc' ? 'desc' : 'asc');
      save();
    });
  });
  var p = params();
  if (p.kind) { choose(kind, p.kind); }
  if (p.verdict) { choose(verdict, p.verdict); }
  filter();
  if (p.sort) { sort(p.sort, p.dir === 'desc' ? 'desc' : 'asc'); }
  document.body.dataset.ready = '1';
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def step_answer(answer: Mapping[str, Any] | None) -> str:
    """A step's answer (`{"result": ...}` or `{"error": {...}}`) as one line of text."""
    if not answer:
        return ""
    if "error" in answer:
        err = answer["error"]
        inside = f"keys={show(err['keys'])}" if "keys" in err else err.get("message", "")
        return f"raises {err.get('type', '?')}({inside})"
    if "result" in answer:
        return "-> " + show(answer["result"])
    return ""


def _per_key(value: Any) -> dict[str, str] | None:
    """A per-key list of a state (blocks, lookups) as key -> the rest, shown."""
    if not isinstance(value, list) or not all(isinstance(x, dict) and "key" in x for x in value):
        return None
    return {
        show(x["key"]): ", ".join(f"{k} {show(v)}" for k, v in x.items() if k != "key")
        for x in value
    }


def _compared(step: Mapping[str, Any]) -> str:
    """The state the model expected beside the one observed, where they differ: one
    row per differing field (per key, for blocks and lookups), highlighted."""
    expected, observed = step.get("state_expected"), step.get("state_after")
    if not isinstance(expected, dict) or not isinstance(observed, dict) or expected == observed:
        return ""
    rows = []
    for name in [*expected, *(n for n in observed if n not in expected)]:
        a, b = expected.get(name), observed.get(name)
        if a == b:
            continue
        ka, kb = _per_key(a), _per_key(b)
        if ka is not None and kb is not None:
            for key in [*ka, *(k for k in kb if k not in ka)]:
                if ka.get(key) != kb.get(key):
                    rows.append((f"{name} {key}", ka.get(key, "absent"), kb.get(key, "absent")))
        else:
            rows.append((name, show(a), show(b)))
    body = "".join(
        f"<tr class='differs'><td>{_e(n)}</td><td class='expected'>{_e(x)}</td>"
        f"<td class='observed'>{_e(y)}</td></tr>"
        for n, x, y in rows
    )
    return (
        "<table class='compare'><thead><tr><th>state after</th><th>expected (model)</th>"
        f"<th>observed</th></tr></thead><tbody>{body}</tbody></table>"
    )


def _steps_table(steps: tuple[Mapping[str, Any], ...]) -> str:
    rows = []
    for i, step in enumerate(steps):
        mine = step_answer(step)
        model = step_answer(step.get("model"))
        compared = _compared(step)
        diverges = (bool(model) and mine != model) or bool(compared)
        if step.get("fault"):
            f = step["fault"]
            model = f"(not stepped: policy hook {f.get('hook')!s} fails on call {f.get('call')})"
        changes = step.get("changes") or []
        change = (
            "<ul class='changes'>" + "".join(f"<li>{_e(c)}</li>" for c in changes) + "</ul>"
            if changes
            else ("—" if step.get("state_after") is not None and not compared else "")
        )
        rows.append(
            f"<tr class='step{' diverges' if diverges else ''}' data-op='{_e(step.get('op', ''))}'>"
            f"<td class='num'>{i}</td><td><code>{_e(step.get('call', ''))}</code></td>"
            f"<td class='observed'>{_e(mine or step.get('note', ''))}</td>"
            f"<td class='expected'>{_e(model)}</td>"
            f"<td>{change}{compared}</td></tr>"
        )
    return (
        "<table class='steps'><thead><tr><th>#</th><th>call</th><th>result or error</th>"
        "<th>model (expected)</th><th>state change after it</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _record(i: int, e: Entry) -> str:
    status = "passed" if e.ok else "failed"
    parts = []
    if e.detail:
        first, _, rest = e.detail.partition("\n")
        parts.append(f"<div class='reason'>{_e(first)}</div>")
        if rest:
            parts.append(f"<pre>{_e(rest)}</pre>")
    if e.steps:
        parts.append(_steps_table(e.steps))
    if e.counterexample:
        label = "runnable snippet" if e.steps else "counterexample"
        parts.append(
            f"<details class='snippet'{'' if e.steps else ' open'}><summary>{label}</summary>"
            f"<pre>{_e(e.counterexample)}</pre></details>"
        )
    if e.reproduce:
        parts.append(f"<div>reproduce: <code class='reproduce'>{_e(e.reproduce)}</code></div>")
    body = "".join(parts)
    details = (
        f"<details class='record-details'{' open' if not e.ok else ''}><summary>details"
        f"</summary>{body}</details>"
        if body
        else ""
    )
    return (
        f"<tr class='record {status}' id='record-{i}' data-index='{i}' data-name='{_e(e.name)}' "
        f"data-kind='{_e(e.kind)}' data-verdict='{_e(e.verdict)}' data-bounds='{_e(e.bounds)}' "
        f"data-seconds='{e.seconds:.4f}'>"
        f"<td><span class='name'>{_e(e.name)}</span>{details}</td><td>{_e(e.kind)}</td>"
        f"<td class='{'ok' if e.ok else 'bad'}'>{_e(e.verdict)}</td><td>{_e(e.bounds)}</td>"
        f"<td class='num'>{e.seconds:.3f}</td></tr>"
    )


def _options(select_id: str, label: str, values: list[str]) -> str:
    opts = "".join(f"<option value='{_e(v)}'>{_e(v)}</option>" for v in values)
    return (
        f"<label>{label} <select id='{select_id}'><option value='all'>all</option>"
        f"{opts}</select></label>"
    )


def _facts(doc: Mapping[str, Any]) -> list[tuple[str, str]]:
    tool = doc.get("tool", {})
    out = [
        ("command", " ".join(["evictable", *doc.get("argv", [])])),
        ("exit code", f"{doc.get('exit_code')} ({'ok' if doc.get('ok') else 'not ok'})"),
        ("tool", f"evictable {tool.get('version', '?')}, commit {tool.get('commit') or 'unknown'}"),
        ("seconds", f"{float(doc.get('seconds', 0.0)):.1f}"),
        ("report schema", f"{doc.get('schema')} version {doc.get('schema_version')}"),
    ]
    if doc.get("command") == "verify" and "counts" in doc:
        c = doc["counts"]
        out.append(("level", str(doc.get("level"))))
        out.append(
            (
                "counts",
                f"{c['records']} records, {c['failed']} failed; by kind "
                + ", ".join(f"{k} {n}" for k, n in c["by_kind"].items())
                + "; by verdict "
                + ", ".join(f"{k} {n}" for k, n in c["by_verdict"].items()),
            )
        )
    if doc.get("command") == "check" and "contract" in doc:
        ct = doc["contract"]
        inputs = [k for k, v in ct.get("inputs", {}).items() if not v]
        out += [
            (
                "subject",
                f"{doc.get('spec')} (target {doc.get('target')}, policy {doc.get('policy')})",
            ),
            (
                "contract",
                f"{ct['mode']} contract, {ct['errors']} errors"
                + (", black box" if ct.get("black_box") else "")
                + (", no " + ", no ".join(inputs) + " calls" if inputs else ", all inputs"),
            ),
            ("seed", str(doc.get("seed"))),
        ]
        conf = doc.get("conformance") or {}
        bounds = [f"conformance {conf.get('examples')} examples x {conf.get('steps')} steps"]
        runs = doc.get("explorations") or []
        if runs:
            b = runs[0].get("bounds", {})
            bounds.append("explorer " + " ".join(f"{k}={v}" for k, v in b.items()))
        out.append(("bounds", "; ".join(bounds)))
    if doc.get("error"):
        out.append(("error", str(doc["error"])))
    out.append(("reproduce", reproduce(doc)))
    return out


def render_html(doc: Mapping[str, Any]) -> str:
    """The report `doc` as one self-contained HTML page (see the module docstring)."""
    rows = entries(doc)
    command = str(doc.get("command", ""))
    ok = bool(doc.get("ok"))
    verdict = str(doc.get("verdict") or ("ok" if ok else "not ok"))
    if doc.get("error"):
        verdict = "could not run"
    title = f"evictable {command}: {verdict}"
    facts = "".join(f"<dt>{_e(k)}</dt><dd><code>{_e(v)}</code></dd>" for k, v in _facts(doc))
    kinds = sorted({e.kind for e in rows})
    verdicts = sorted({e.verdict for e in rows})
    records = "".join(_record(i, e) for i, e in enumerate(rows))
    diagrams = "".join(
        f"<figure>{svg(m)}<figcaption>{_e(m.name.upper())} block lifecycle, drawn from "
        "the table of model/lifecycle.py</figcaption></figure>"
        for m in (CPU_MACHINE, GPU_MACHINE)
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>"
        f"<body data-command='{_e(command)}' data-exit-code='{_e(doc.get('exit_code'))}'>"
        f"<header><h1 class='{'ok' if ok else 'bad'}'>{_e(title)}</h1>"
        f"<dl class='facts'>{facts}</dl></header>"
        "<section id='records'><h2>Records</h2><div class='filters'>"
        + _options("filter-kind", "kind", kinds)
        + _options("filter-verdict", "verdict", verdicts)
        + f"<span id='shown'>{len(rows)} of {len(rows)} records shown</span></div>"
        "<table id='records-table'><thead><tr><th data-sort='name'>record</th>"
        "<th data-sort='kind'>kind</th><th data-sort='verdict'>verdict</th>"
        "<th data-sort='bounds'>bounds</th><th data-sort='seconds' data-numeric>seconds</th>"
        f"</tr></thead><tbody>{records}</tbody></table></section>"
        f"<section id='lifecycle'><h2>Lifecycle</h2><div class='diagrams'>{diagrams}</div>"
        f"</section><script>{_SCRIPT}</script></body></html>\n"
    )
