"""The tier contract engine (`check.tier`) on tiers written here, without vLLM: a tier
that keeps the contract conforms, and each way of breaking it is its own class."""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pytest

from evictable.proofs.base.compare import Kind
from evictable.proofs.check.tier import TIER_CLASSES, check_tier


class LookupResult(Enum):  # named as vLLM's, which the engine recognises by name
    HIT = 1
    MISS = 2
    RETRY = 3
    HIT_PENDING = 4


@dataclass
class Result:
    job_id: Any
    success: Any
    successful_keys: Any = None


@dataclass
class Event:
    keys: tuple[Hashable, ...]
    removed: bool


class GoodTier:
    """In memory: a job finishes at once; a load of a key it lacks fails (a result)."""

    def __init__(self) -> None:
        self.present: set[Hashable] = set()
        self.results: list[Result] = []
        self.new_events: list[Event] = []

    def new_request(self, req: str) -> None:
        return None

    def request_finished(self, req: str) -> None:
        return None

    def lookup(self, key: Hashable, req: str) -> Any:
        return LookupResult.HIT if key in self.present else LookupResult.MISS

    def submit_store(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        self.present.update(keys)
        self.results.append(Result(job, True))
        self.new_events.append(Event(tuple(keys), False))

    def submit_load(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        self.results.append(Result(job, all(k in self.present for k in keys)))

    def finished(self) -> Any:
        out, self.results = self.results, []
        return out

    def drain(self) -> None:
        return None

    def end_step(self) -> None:
        return None

    def events(self) -> Any:
        out, self.new_events = self.new_events, []
        return out

    def shutdown(self) -> None:
        return None


class RaisesOnMissingLoad(GoodTier):
    def submit_load(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        if any(k not in self.present for k in keys):
            raise KeyError("not here")
        super().submit_load(job, keys, slots, req)


class ReportsTwice(GoodTier):
    def submit_store(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        super().submit_store(job, keys, slots, req)
        self.results.append(Result(job, True))


class ReportsUnknown(GoodTier):
    def submit_store(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        super().submit_store(job, keys, slots, req)
        self.results.append(Result(job + 1000, True))


class DrainLeavesJobs(GoodTier):
    """Holds every store result back until a later poll, drain or not."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Result] = []

    def submit_store(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        super().submit_store(job, keys, slots, req)
        self.held.append(self.results.pop())

    def finished(self) -> Any:
        out = super().finished()
        if len(self.held) > 1:
            out.append(self.held.pop(0))
        return out


class Unstable(GoodTier):
    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def lookup(self, key: Hashable, req: str) -> Any:
        self.n += 1
        return LookupResult.HIT if self.n % 2 else LookupResult.MISS


class AnswersGarbage(GoodTier):
    def lookup(self, key: Hashable, req: str) -> Any:
        return "yes"


class PartialOutside(GoodTier):
    def submit_load(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        self.results.append(Result(job, False, ("elsewhere",)))


class BadEvents(GoodTier):
    def events(self) -> Any:
        return [Event(("never stored",), False)]


class ResultsNotIterable(GoodTier):
    def finished(self) -> Any:
        return None


class DrainBlocks(GoodTier):
    def drain(self) -> None:
        threading.Event().wait()


def key(i: int) -> str:
    return f"k{i}"


def run(tier: type[GoodTier], examples: int = 6, backstop_s: float = 30.0) -> set[Kind]:
    result = check_tier(
        tier,
        key,
        ("from tests.proofs.check.test_tier_contract import *",),
        f"t = {tier.__name__}()",
        examples=examples,
        steps=25,
        seed=7,
        backstop_s=backstop_s,
    )
    return {f.kind for f in result.findings}


def test_a_tier_that_keeps_the_contract_conforms() -> None:
    assert run(GoodTier, examples=20) == set()


@pytest.mark.parametrize(
    ("tier", "kind"),
    [
        (RaisesOnMissingLoad, Kind.TIER_RAISED),
        (ReportsTwice, Kind.TIER_TWICE),
        (ReportsUnknown, Kind.TIER_UNKNOWN),
        (DrainLeavesJobs, Kind.TIER_UNREPORTED),
        (Unstable, Kind.TIER_UNSTABLE),
        (AnswersGarbage, Kind.TIER_GARBAGE),
        (PartialOutside, Kind.TIER_GARBAGE),
        (BadEvents, Kind.TIER_EVENTS),
        (ResultsNotIterable, Kind.TIER_GARBAGE),
    ],
)
def test_each_broken_tier_is_its_own_class(tier: type[GoodTier], kind: Kind) -> None:
    assert run(tier) == {kind}


def test_a_tier_that_blocks_is_a_finding_not_a_hang() -> None:
    assert run(DrainBlocks, examples=1, backstop_s=0.2) == {Kind.HANG}


def test_findings_come_with_a_runnable_trace() -> None:
    result = check_tier(ReportsTwice, key, (), "t = ReportsTwice()", examples=1, seed=1)
    (finding,) = result.findings
    assert finding.snippet.startswith("t = ReportsTwice()")
    assert "t.submit_store(0, [K(0), K(1)], [0, 1], 'r0')" in finding.snippet
    assert finding.snippet.rstrip().endswith("# job 0 reported a second time")


def test_the_same_seed_finds_the_same_traces() -> None:
    def traces() -> list[str]:
        got = check_tier(Unstable, key, (), "t = Unstable()", examples=5, steps=20, seed=3)
        return [f.trace for f in got.findings]

    assert traces() == traces()


def test_every_class_of_the_contract_is_ranked() -> None:
    from evictable.proofs.base.findings import severity

    assert {severity(k) for k in TIER_CLASSES} <= {"atomicity", "behaviour"}
