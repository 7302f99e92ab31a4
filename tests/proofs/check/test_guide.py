"""`check` says what to do with a subject it cannot drive, in one line, exit code 2.

vLLM is not installed here: its classes are stood in for by a package named `vllm`
written into a temporary directory, with vLLM 0.33's class names, modules and
signatures (`lookup(key, req_context)`, ...). The guide recognises them by name and
module and reads their signatures; it never calls them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.contract import DEFAULT, PRESETS, ContractError, Mode, resolve
from evictable.proofs.check.guide import (
    KNOWN,
    guide,
    known_engine,
    probe_manager,
    signature_problems,
)
from evictable.proofs.check.setup import SetupError

ROOT = Path(__file__).resolve().parents[3]
ADAPTERS = "evictable.proofs.adapters.vllm"

FAKE_VLLM = {
    "vllm/__init__.py": "__version__ = '0.33.0'\n",
    "vllm/v1/__init__.py": "",
    "vllm/v1/kv_offload/__init__.py": "",
    "vllm/v1/kv_offload/cpu/__init__.py": "",
    "vllm/v1/kv_offload/cpu/manager.py": """
        class CPUOffloadingManager:
            def __init__(self, num_chunks, cache_policy="lru", cache_policy_module_path=None,
                         enable_events=False, store_threshold=1):
                self.num_chunks = num_chunks

            def lookup(self, key, req_context):
                raise AssertionError("never called")

            def prepare_load(self, keys, req_context):
                raise AssertionError("never called")

            def touch(self, keys, req_context):
                raise AssertionError("never called")

            def complete_load(self, keys, req_context):
                raise AssertionError("never called")

            def prepare_store(self, keys, req_context):
                raise AssertionError("never called")

            def complete_store(self, keys, req_context, success=True):
                raise AssertionError("never called")

            def reset_cache(self):
                pass

            def take_events(self):
                return []
    """,
    "vllm/v1/core/__init__.py": "",
    "vllm/v1/core/kv_cache_utils.py": """
        class KVCacheBlock:
            def __init__(self, block_id):
                self.block_id = block_id


        class FreeKVCacheBlockQueue:
            def __init__(self, blocks):
                self.blocks = list(blocks)

            def popleft(self): ...
            def popleft_n(self, n): ...
            def remove(self, block): ...
            def append(self, block): ...
            def append_n(self, blocks): ...
            def prepend_n(self, blocks): ...
            def get_all_free_blocks(self): ...
            def iter_blocks_after(self, cursor): ...
    """,
    "vllm/v1/core/block_pool.py": """
        class BlockPool:
            def __init__(self, num_gpu_blocks, enable_caching, hash_block_size):
                raise AssertionError("never constructed")

            def get_new_blocks(self, num_blocks): ...
            def touch(self, blocks): ...
            def free_blocks(self, ordered_blocks): ...
            def get_cached_block(self, block_hash, kv_cache_group_ids): ...
            def reset_prefix_cache(self): ...
    """,
    "vllm/v1/simple_kv_offload/__init__.py": "",
    "vllm/v1/simple_kv_offload/manager.py": """
        class SimpleCPUOffloadScheduler:
            def __init__(self, vllm_config, kv_cache_config, cpu_capacity_bytes,
                         scheduler_block_size, hash_block_size, lazy_offload=False):
                raise AssertionError("never constructed")
    """,
}

USER = """
class NeedsContext:
    '''A manager written against vLLM's signatures, not vLLM's class.'''

    def __init__(self, num_blocks, policy="lru", enable_events=False):
        pass

    def lookup(self, key, req_context): ...
    def prepare_store(self, keys, req_context): ...
    def complete_store(self, keys, success=True): ...
    def prepare_load(self, keys): ...
    def complete_load(self, keys): ...
    def touch(self, keys): ...
    def reset_cache(self): ...
    def take_events(self): return []


def no_events(num_blocks, policy, enable_events):
    class Partial:
        def lookup(self, key): ...
        def prepare_store(self, keys): ...
        def complete_store(self, keys, success=True): ...
        def prepare_load(self, keys): ...
        def complete_load(self, keys): ...
        def touch(self, keys): ...

    return Partial()
"""


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stand_ins")
    for name, text in FAKE_VLLM.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    (root / "user_managers.py").write_text(textwrap.dedent(USER), encoding="utf-8")
    return root


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evictable.proofs.cli.main", "check", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def _one_line(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("spec", "flags", "adapter"),
    [
        ("vllm.v1.kv_offload.cpu.manager:CPUOffloadingManager", [], f"{ADAPTERS}:lru_manager"),
        (
            "vllm.v1.kv_offload.cpu.manager:CPUOffloadingManager",
            ["--black-box"],
            f"{ADAPTERS}:lru_manager",
        ),
        (
            "vllm.v1.kv_offload.cpu.manager:CPUOffloadingManager",
            ["--preset", "third-party"],
            f"{ADAPTERS}:lru_manager",
        ),
        (
            "vllm.v1.core.kv_cache_utils:FreeKVCacheBlockQueue",
            ["--target", "free-queue"],
            f"{ADAPTERS}:free_queue --target free-queue",
        ),
        (
            "vllm.v1.core.kv_cache_utils:FreeKVCacheBlockQueue",
            [],
            f"{ADAPTERS}:free_queue --target free-queue",
        ),
        (
            "vllm.v1.core.block_pool:BlockPool",
            ["--target", "block-pool"],
            f"{ADAPTERS}:block_pool --target block-pool",
        ),
        ("vllm.v1.core.block_pool:BlockPool", [], f"{ADAPTERS}:block_pool --target block-pool"),
        (
            "vllm.v1.simple_kv_offload.manager:SimpleCPUOffloadScheduler",
            ["--target", "lazy"],
            f"{ADAPTERS}:lazy_scanner --target lazy --pool {ADAPTERS}:block_pool",
        ),
    ],
)
def test_vllm_classes_without_the_adapter_name_the_shipped_adapter(
    stand_ins: Path, spec: str, flags: list[str], adapter: str
) -> None:
    line = _one_line(_check(stand_ins, spec, *flags, "--examples", "2", "--no-explore"))
    assert line.startswith(f"evictable check: {spec}: ")
    assert f"evictable check {adapter}" in line
    assert "finding" not in line and "REJECTED" not in line


def test_vllm_manager_without_the_adapter_says_which_signatures_differ(stand_ins: Path) -> None:
    line = _one_line(_check(stand_ins, "vllm.v1.kv_offload.cpu.manager:CPUOffloadingManager"))
    assert "vLLM's CPU offloading manager" in line
    assert "lookup(key, req_context)" in line


@pytest.mark.parametrize("flags", [[], ["--black-box"], ["--preset", "third-party"]])
def test_a_signature_that_differs_from_the_protocol_needs_an_adapter(
    stand_ins: Path, flags: list[str]
) -> None:
    line = _one_line(_check(stand_ins, "user_managers:NeedsContext", *flags, "--no-explore"))
    assert "adapter needed" in line
    assert "lookup(key, req_context)" in line and "prepare_store(keys, req_context)" in line
    assert "lookup(key)" in line  # what the engines call


def test_a_manager_without_snapshot_is_pointed_at_the_preset() -> None:
    run = _check(ROOT, "examples.third_party_lru:make_manager")
    line = _one_line(run)
    assert "has no snapshot" in line
    assert "--preset third-party (= --black-box --contract safety --errors any --valid-only)" in (
        line
    )


def test_a_manager_without_events_is_told_which_methods_every_contract_calls(
    stand_ins: Path,
) -> None:
    line = _one_line(_check(stand_ins, "user_managers:no_events", "--preset", "third-party"))
    assert "lacks reset_cache, take_events" in line
    assert "reset_cache(), take_events()" in line


def test_known_engine_matches_by_class_name_and_vllm_module_only() -> None:
    fake = type("CPUOffloadingManager", (), {"__module__": "vllm.v1.kv_offload.cpu.manager"})
    assert known_engine(fake) is KNOWN[0]
    assert known_engine(fake()) is KNOWN[0]
    sub = type("Mine", (fake,), {"__module__": "mypkg"})
    assert known_engine(sub) is KNOWN[0]
    assert known_engine(CPUOffloadingManager) is None  # this project's own class
    assert known_engine(CPUOffloadingManager(2)) is None


def test_this_projects_manager_needs_no_guidance() -> None:
    assert guide(CPUOffloadingManager, "manager", DEFAULT, "x") is None
    assert guide(CPUOffloadingManager(2), "manager", DEFAULT, "x") is None
    probe_manager(CPUOffloadingManager, "lru", DEFAULT)


def test_signature_problems_accept_defaults_varargs_and_keywords() -> None:
    class Flexible:
        def lookup(self, key, extra=None): ...  # type: ignore[no-untyped-def]
        def prepare_store(self, *keys): ...  # type: ignore[no-untyped-def]
        def complete_store(self, keys, **options): ...  # type: ignore[no-untyped-def]

    class Strict:
        def complete_store(self, keys): ...  # type: ignore[no-untyped-def]

    from evictable.proofs.check.guide import api_of

    methods = api_of("manager", DEFAULT)
    assert signature_problems(Flexible, methods) == []
    assert signature_problems(Flexible(), methods) == []
    assert signature_problems(Strict, methods) == ["complete_store(keys)"]


def test_rejects_a_class_with_other_signatures_before_calling_it() -> None:
    class Explodes:
        def __init__(self, *args: object) -> None:
            raise AssertionError("never constructed")

        def lookup(self, key: object, req_context: object) -> None: ...

    with pytest.raises(SetupError, match="adapter needed"):
        probe_manager(Explodes, "lru", DEFAULT, "mod:Explodes")


def test_the_third_party_preset_is_black_box_safety_any_errors_valid_only() -> None:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> object:
        return None

    got = resolve(factory, preset="third-party")
    assert got.black_box and got.mode is Mode.SAFETY and got.errors.value == "any"
    assert not (got.inputs.invalid or got.inputs.duplicates or got.inputs.malformed)
    assert resolve(factory, preset="third-party", errors="typed").errors.value == "typed"
    assert set(PRESETS) == {"third-party"}


def test_rejects_an_unknown_preset() -> None:
    with pytest.raises(ContractError, match="unknown preset 'mine'"):
        resolve(lambda n, p, e: None, preset="mine")
