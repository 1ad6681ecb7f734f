"""Issue 26: every real file that loads, applied again once Podium scheduled it, is a no-op.

The files are the shared real clusters (``../shared/real-clusters``, gathered from public
repositories; the project does not copy them, so each case is skipped when the folder is
absent). Each file, and each file beside the node lists of its folder, is put into the store
the daemon runs on, the daemon's own actors schedule it until the queue is idle (binding,
recording Unschedulable messages, nominating: ``podium simulate``'s mode, virtual time), and
then the same objects are put again, as a second ``podium apply`` sends them: every object
must answer ``unchanged``, with no revision and no change (so no watch event).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest
import trio
import trio.testing

from podium.actors.mail.messages import Attempted, BeginScheduling
from podium.actors.runtime.mailbox import ask, send
from podium.actors.supervisor.supervisor import Runtime, load_plugin_set
from podium.protocol.config import SchedulerConfig
from podium.protocol.loader import LoadErrors, load_all
from podium.protocol.objects import KubeObject, Node, Pod, scoped_namespace
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import Published, StoreFailure, StoreMsg, WriteObjects
from podium.store.memory import memory_store

ROOT = Path(__file__).resolve().parents[2]
REAL_CLUSTERS = next(
    (
        p
        for p in (
            Path(os.environ.get("PODIUM_REAL_CLUSTERS", ROOT / "missing")),
            ROOT.parent / "shared" / "real-clusters",  # beside the main checkout
            Path("/work/shared/real-clusters"),  # beside a worktree
        )
        if p.is_dir()
    ),
    ROOT / "missing",
)
CONFIG = SchedulerConfig()
PLUGINS = load_plugin_set(CONFIG)


@dataclass(frozen=True)
class Case:
    name: str
    files: tuple[Path, ...]


def _objects(files: Sequence[Path]) -> list[KubeObject] | None:
    try:
        return load_all(files).objects or None
    except (LoadErrors, OSError):
        return None


def _cases() -> list[Case]:
    """Each file, and each file with its folder's node lists (so pods get bound)."""
    if not REAL_CLUSTERS.is_dir():
        return []
    files = sorted(p for p in REAL_CLUSTERS.rglob("*") if p.is_file())
    cases = [Case(str(f.relative_to(REAL_CLUSTERS)), (f,)) for f in files]
    node_lists = [
        f for f in files if (objs := _objects([f])) and all(isinstance(o, Node) for o in objs)
    ]
    for f in files:
        objs = _objects([f])
        if not objs or not any(isinstance(o, Pod) for o in objs):
            continue
        nodes = tuple(n for n in node_lists if n.parent == f.parent)
        if nodes:
            names = " + ".join(str(p.relative_to(REAL_CLUSTERS)) for p in (*nodes, f))
            cases.append(Case(names, (*nodes, f)))
    return cases


CASES = _cases()


async def _scheduled(objects: Sequence[KubeObject], core: StoreCore) -> StoreFailure | None:
    """Put ``objects`` into ``core`` through the store actor and let the daemon's actors
    schedule until the queue is idle; the store's refusal, if it refused the put."""
    reports_tx, reports_rx = trio.open_memory_channel[Attempted](math.inf)

    def store(
        inbox: trio.MemoryReceiveChannel[StoreMsg],
        subscribers: Sequence[trio.MemorySendChannel[Published]],
    ) -> StoreActor:
        return memory_store(inbox, subscribers, core)

    runtime = Runtime(
        CONFIG, PLUGINS, store, reports=reports_tx, sync_binds=True, exit_when_idle=True, seed=1
    )
    refused: StoreFailure | None = None
    async with trio.open_nursery() as nursery:
        handles = await nursery.start(runtime.run)
        try:
            written = await ask(handles.store, lambda r: WriteObjects(puts=list(objects), reply=r))
            if isinstance(written, StoreFailure):
                refused = written
            else:
                await send(handles.scheduler, BeginScheduling())
        finally:
            await handles.aclose()
        async with reports_rx:
            async for _ in reports_rx:
                pass
    return refused


def _key(obj: KubeObject) -> tuple[str, str, str]:
    kind = type(obj).__name__
    return (kind, scoped_namespace(kind, obj.metadata.namespace), obj.metadata.name)


@pytest.mark.skipif(not CASES, reason=f"no real clusters at {REAL_CLUSTERS}")
@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_a_real_file_applied_again_is_a_no_op(case: Case) -> None:
    objects = _objects(case.files)
    if objects is None:
        pytest.skip("does not load (podium apply refuses it)")
    if any(not o.metadata.name for o in objects):
        pytest.skip("creates objects by generateName (each put makes another, as kubectl create)")
    keys = [_key(o) for o in objects]
    if len(set(keys)) < len(keys):
        pytest.skip("names an object twice (the second put of it replaces the first)")
    core = StoreCore()
    refused = trio.run(
        _scheduled, objects, core, clock=trio.testing.MockClock(autojump_threshold=0)
    )
    if refused is not None:
        pytest.skip(f"the store refuses it: {refused.message}")
    before = core.revision
    stored = core.all_objects()

    revision, statuses, changes = core.write(objects)

    assert [s for s in statuses if s.action != "unchanged"] == []
    assert (revision, changes, core.all_objects()) == (before, [], stored)
