"""The tiering regions of `docs/spec.md`, generated from `model/tiering_tables.py` and
`model/tiering_invariants.py`: the primary chunk's rules with owners, each phase table
(states, transitions, rejections and no-ops, a diagram), the invariants with their
finding classes, and the named differences of the two profiles.
"""

from __future__ import annotations

import enum

from evictable.model.tiering_invariants import (
    BETWEEN_STEPS,
    FINDING_CLASS,
    LOG_INVARIANTS,
    POSTCONDITIONS,
    TIERING_INVARIANTS,
)
from evictable.model.tiering_tables import (
    CHUNK_RULES,
    PHASE_TABLES,
    PROFILE_DIFFERENCES,
    PhaseTable,
)

__all__ = [
    "chunk_rules_table",
    "differences_table",
    "invariants_table",
    "phase_diagram",
    "phase_rejections",
    "phase_states",
    "phase_transitions",
    "tiering_regions",
]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def chunk_rules_table() -> str:
    """Markdown: chunk event | CPU table's event | who may make it | owners, and the
    rule's data (guard, on the chunk, on the party) the Z3 proofs are built from."""
    rows = [
        "| event | CPU event | who may make it | owners | guard | on the chunk | on the party |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in CHUNK_RULES:
        cpu = f"`{r.cpu.value}`" if r.cpu is not None else "— (state unchanged)"
        rows.append(
            f"| `{r.event.value}` | {cpu} | {_cell(r.who)} | {_cell(r.owners)} | "
            f"{r.guard.value} | {r.on_chunk.value} | {r.on_party.value} |"
        )
    return "\n".join(rows)


def phase_states(t: PhaseTable) -> str:
    """Markdown: state | meaning (initial and final states marked)."""
    rows = ["| state | meaning |", "|---|---|"]
    for s in t.states:
        mark = " (initial)" if s in t.initial else " (final)" if s in t.final else ""
        rows.append(f"| `{s.name}`{mark} | {_cell(t.meanings[s])} |")
    return "\n".join(rows)


def _name(x: enum.Enum) -> str:
    return str(x.value)


def phase_transitions(t: PhaseTable) -> str:
    """Markdown: event | from → to | case."""
    rows = ["| event | from → to | case |", "|---|---|---|"]
    for m in t.moves:
        rows.append(
            f"| `{_name(m.event)}` | {m.source.name} → {m.target.name} | {_cell(m.case) or '—'} |"
        )
    return "\n".join(rows)


def phase_rejections(t: PhaseTable) -> str:
    """Markdown: every (state, event) pair that is rejected or a no-op."""
    rows = ["| event | in state | outcome | why |", "|---|---|---|---|"]
    for r in t.refusals:
        rows.append(
            f"| `{_name(r.event)}` | {r.state.name} | rejected: `{r.error.__name__}` | "
            f"{_cell(r.reason)} |"
        )
    for n in t.noops:
        rows.append(f"| `{_name(n.event)}` | {n.state.name} | no-op | {_cell(n.reason)} |")
    return "\n".join(rows)


def phase_diagram(t: PhaseTable) -> str:
    """A Mermaid state diagram of one phase table."""
    lines = ["stateDiagram-v2"]
    for s in t.initial:
        lines.append(f"    [*] --> {s.name}")
    for m in t.moves:
        label = _name(m.event) + (f" ({m.case.split(':')[0]})" if m.case else "")
        lines.append(f"    {m.source.name} --> {m.target.name} : {label}")
    for s in t.final:
        lines.append(f"    {s.name} --> [*]")
    return "```mermaid\n" + "\n".join(lines) + "\n```"


def invariants_table() -> str:
    """Markdown: invariant | finding class | when judged | statement."""
    rows = ["| invariant | finding class | judged | statement |", "|---|---|---|---|"]
    groups = [
        (TIERING_INVARIANTS, "every state"),
        (BETWEEN_STEPS, "every state between steps"),
        *((invs, f"after `{call}`") for call, invs in POSTCONDITIONS.items()),
    ]
    for invs, when in groups:
        for name, inv in invs.items():
            doc = " ".join((inv.__doc__ or "").split())
            judged = when + (" (the call's record)" if name in LOG_INVARIANTS else "")
            rows.append(f"| `{name}` | `{FINDING_CLASS[name]}` | {judged} | {_cell(doc)} |")
    return "\n".join(rows)


def differences_table() -> str:
    """Markdown: difference | spec | vllm-0.33."""
    rows = ["| difference | `spec` | `vllm-0.33` |", "|---|---|---|"]
    for name, spec, vllm in PROFILE_DIFFERENCES:
        rows.append(f"| {name} | {_cell(spec)} | {_cell(vllm)} |")
    return "\n".join(rows)


def tiering_regions() -> dict[str, str]:
    """Every tiering region's body, by region name."""
    out = {
        "tiering-chunk": chunk_rules_table(),
        "tiering-invariants": invariants_table(),
        "tiering-differences": differences_table(),
    }
    for t in PHASE_TABLES:
        out[f"tiering-{t.name}-states"] = phase_states(t)
        out[f"tiering-{t.name}-transitions"] = phase_transitions(t)
        out[f"tiering-{t.name}-rejections"] = phase_rejections(t)
        out[f"tiering-{t.name}-diagram"] = phase_diagram(t)
    return out
