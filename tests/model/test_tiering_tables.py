"""The tiering lifecycles as data: validated at import, and a broken table refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evictable.model.errors import DuplicateRequestError, UnknownJobError
from evictable.model.lifecycle import CPU_MACHINE, TableError
from evictable.model.tiering_tables import (
    CHUNK_RULES,
    JOB_TABLE,
    PHASE_TABLES,
    REQUEST_TABLE,
    ChunkEvent,
    JobEvent,
    Move,
    Noop,
    RequestEvent,
    chunk_rule,
    step_phase,
    validate_phases,
)
from evictable.model.tiering_types import JobPhase, RequestPhase


def test_every_table_is_valid() -> None:
    for table in PHASE_TABLES:
        validate_phases(table)


def test_every_chunk_event_has_one_rule_on_the_cpu_table() -> None:
    assert {r.event for r in CHUNK_RULES} == set(ChunkEvent)
    for rule in CHUNK_RULES:
        assert rule.cpu is None or rule.cpu in CPU_MACHINE.events
    assert chunk_rule(ChunkEvent.SUBMIT_PROMOTION).cpu is None


def test_every_state_event_pair_is_covered_exactly_once() -> None:
    for table in PHASE_TABLES:
        for state in table.states:
            for event in table.events:
                kinds = [
                    bool(table.moves_from(state, event)),
                    table.refusal(state, event) is not None,
                    table.noop(state, event) is not None,
                ]
                assert sum(kinds) == 1, (table.name, state, event)


def test_step_phase_follows_moves_noops_and_refusals() -> None:
    assert step_phase(JOB_TABLE, JobPhase.REGISTERED, JobEvent.SUBMIT) is JobPhase.SUBMITTED
    assert step_phase(JOB_TABLE, JobPhase.NONE, JobEvent.PROCESS) is JobPhase.NONE
    with pytest.raises(UnknownJobError):
        step_phase(JOB_TABLE, JobPhase.REGISTERED, JobEvent.FINISH, item=3)
    with pytest.raises(DuplicateRequestError):
        step_phase(REQUEST_TABLE, RequestPhase.ACTIVE, RequestEvent.NEW, item="r0")


def test_rejects_a_table_with_an_uncovered_pair() -> None:
    broken = replace(JOB_TABLE, noops=JOB_TABLE.noops[1:])
    with pytest.raises(TableError, match="exactly one"):
        validate_phases(broken)


def test_rejects_a_table_with_a_pair_covered_twice() -> None:
    extra = Noop(JobEvent.SUBMIT, JobPhase.REGISTERED, "twice")
    with pytest.raises(TableError, match="exactly one"):
        validate_phases(replace(JOB_TABLE, noops=(*JOB_TABLE.noops, extra)))


def test_rejects_a_table_with_a_trap_state() -> None:
    moves = tuple(m for m in REQUEST_TABLE.moves if m.event is not RequestEvent.FINALISE)
    refusal = replace(REQUEST_TABLE.refusals[3], state=RequestPhase.FINISHED)
    broken = replace(
        REQUEST_TABLE, moves=moves, refusals=(*REQUEST_TABLE.refusals, refusal), final=()
    )
    with pytest.raises(TableError, match=r"unreachable|trap"):
        validate_phases(broken)


def test_rejects_moves_without_distinct_cases() -> None:
    twin = Move(JobEvent.SUBMIT, JobPhase.REGISTERED, JobPhase.NONE)
    with pytest.raises(TableError, match="distinct cases"):
        validate_phases(replace(JOB_TABLE, moves=(*JOB_TABLE.moves, twin)))
