"""`--junit PATH`: a report's records as JUnit XML, so that CI systems show them.

`render_junit(doc)` turns a JSON report (`cli.report`) into one `<testsuites>`
document with one `<testsuite>` per command run and one `<testcase>` per record
(`cli.entries`): a record that is not ok is a `<failure>` whose message is its
verdict and whose text is its counterexample (the reason, the steps -- call, result
or error, state change -- and the runnable snippet), or an `<error>` when it could
not run or reached no verdict (`error`, `unknown`). A finding is one failure: the
engine records that found it pass, naming it in their `<system-out>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from xml.etree import ElementTree

from evictable.proofs.cli.entries import Entry, entries
from evictable.proofs.cli.html import step_answer

__all__ = ["render_junit"]

_ERRORS = ("error", "unknown", "could not run", "incomplete")


def _text(e: Entry) -> str:
    lines = [e.detail] if e.detail else []
    for i, step in enumerate(e.steps):
        answer = step_answer(step)
        model = step_answer(step.get("model"))
        line = f"{i}. {step.get('call', '')}  {answer or step.get('note', '')}"
        if model and model != answer:
            line += f"  (model {model})"
        for change in step.get("changes") or []:
            line += f"\n     {change}"
        lines.append(line)
    if e.counterexample:
        lines.append(e.counterexample)
    if e.reproduce:
        lines.append(f"reproduce: {e.reproduce}")
    return "\n".join(lines)


def _fails(e: Entry) -> bool:
    """Whether a record is a failed test case: not ok, and not an engine whose only
    failure is the findings it found (those are counted once, as their own cases)."""
    return not e.ok and not (e.found and e.verdict not in _ERRORS)


def render_junit(doc: Mapping[str, Any]) -> str:
    """The report `doc` as JUnit XML (see the module docstring)."""
    rows = entries(doc)
    command = str(doc.get("command", ""))
    suites = ElementTree.Element("testsuites", name="evictable")
    suite = ElementTree.SubElement(
        suites,
        "testsuite",
        name=f"evictable {command}",
        tests=str(len(rows)),
        failures=str(sum(1 for e in rows if _fails(e) and e.verdict not in _ERRORS)),
        errors=str(sum(1 for e in rows if _fails(e) and e.verdict in _ERRORS)),
        time=f"{float(doc.get('seconds', 0.0)):.3f}",
    )
    props = ElementTree.SubElement(suite, "properties")
    for name in ("exit_code", "seed", "level", "spec", "schema_version"):
        if doc.get(name) is not None:
            ElementTree.SubElement(props, "property", name=name, value=str(doc[name]))
    for e in rows:
        case = ElementTree.SubElement(
            suite,
            "testcase",
            classname=f"evictable.{command}.{e.kind}",
            name=e.name,
            time=f"{e.seconds:.3f}",
        )
        if e.found and not _fails(e):  # its findings are test cases of their own
            out = ElementTree.SubElement(case, "system-out")
            out.text = f"{e.verdict}: found {', '.join(e.found)} (each its own test case)"
            continue
        if e.ok:
            continue
        tag = "error" if e.verdict in _ERRORS else "failure"
        first = (e.detail or e.verdict).splitlines()[0] if (e.detail or e.verdict) else ""
        fail = ElementTree.SubElement(case, tag, message=f"{e.verdict}: {first}"[:500], type=e.kind)
        fail.text = _text(e)
    ElementTree.indent(suites)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
