"""``podium simulate``: the daemon's own actors, in process, on a cluster dump.

The store is the in-memory one; there are no sockets. The whole dump is put in one write
(atomic, with the store's admission rules), then the scheduler takes pods until the queue is
idle: nothing active and nothing backing off. Two modes make the run repeatable: each bind is
committed before the next cycle starts (so the queue sees every placement before it hands out
the next pod, whatever order trio runs tasks in), and the clock is trio's MockClock with
autojump, so backoff waits take no real time. Pods that fit nowhere stay in the unschedulable
set; the run ends with them reported, and so are the pods with scheduling gates, and the
members of pod groups that never reached minCount pods (or whose group is not in the dump),
which the queue never hands out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

import msgspec
import trio
import trio.testing

from podium.actors.cycle.scheduler import PluginSet
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.result import ScheduleResult
from podium.actors.mail.messages import Attempted, BeginScheduling
from podium.actors.queue.actor import is_pending
from podium.actors.runtime.mailbox import ask, send
from podium.actors.simulation.cluster import PodOutcome, SimulationError
from podium.actors.supervisor.supervisor import Runtime
from podium.protocol.config import SchedulerConfig
from podium.protocol.gangs import min_count, pod_group_key
from podium.protocol.objects import KubeObject, Pod, PodGroup, holds_resources, namespaced_key
from podium.protocol.validation import SCHEDULING_GATED_MESSAGE
from podium.store.actor import StoreActor
from podium.store.core import StoreCore
from podium.store.mail import Published, StoreFailure, StoreMsg, WriteObjects, WriteResult
from podium.store.memory import memory_store

__all__ = ["simulate"]


def _store(
    inbox: trio.MemoryReceiveChannel[StoreMsg],
    subscribers: Sequence[trio.MemorySendChannel[Published]],
) -> StoreActor:
    return memory_store(inbox, subscribers, StoreCore())


async def _simulate(
    objects: Sequence[KubeObject],
    config: SchedulerConfig,
    plugins: PluginSet,
    *,
    seed: int | None,
    explain: bool,
    progress: Callable[[int], None] | None,
) -> list[PodOutcome]:
    reports_tx, reports_rx = trio.open_memory_channel[Attempted](math.inf)
    runtime = Runtime(
        config,
        plugins,
        _store,
        reports=reports_tx,
        sync_binds=True,
        exit_when_idle=True,
        explain_attempts=explain,
        seed=seed,
    )
    outcomes: dict[str, PodOutcome] = {}
    rejected: StoreFailure | None = None
    gated: list[PodOutcome] = []
    stored: list[KubeObject] = []
    async with trio.open_nursery() as nursery:
        handles = await nursery.start(runtime.run)
        try:
            if objects:
                written: WriteResult | StoreFailure = await ask(
                    handles.store, lambda r: WriteObjects(puts=list(objects), reply=r)
                )
                if isinstance(written, StoreFailure):
                    rejected = written
                else:
                    gated = _gated(objects, written, config.scheduler_name)
                    stored = _as_stored(objects, written)
            if rejected is None:
                await send(handles.scheduler, BeginScheduling())
        finally:
            # Closing our mailboxes lets the runtime end once the scheduler is idle.
            await handles.aclose()
        async with reports_rx:
            async for report in reports_rx:
                key = report.pod.key
                previous = outcomes.pop(key, None)
                node = report.node if report.status == "scheduled" else None
                outcomes[key] = PodOutcome(
                    report.pod,
                    node,
                    None if node is not None else report.result.message,
                    report.attempts
                    if previous is None
                    else max(report.attempts, previous.attempts),
                    report.result,
                    # Evictions stand whatever the later attempts did.
                    [*(previous.preempted if previous else []), *report.preempted],
                    report.group,
                    report.hints,
                )
                if progress is not None:
                    progress(len(outcomes))
    if rejected is not None:
        lines = [rejected.message] + [
            f"  objects[{e.index}] {e.kind} {e.namespace + '/' if e.namespace else ''}{e.name}: "
            f"{e.path + ': ' if e.path else ''}{e.message}"
            for e in rejected.errors
        ]
        raise SimulationError(
            "\n".join(lines), objects=[(e.index, e.message, e.path) for e in rejected.errors]
        )
    waiting = _waiting(stored, outcomes.keys(), config.scheduler_name)
    return [*outcomes.values(), *gated, *waiting]


def _as_stored(objects: Sequence[KubeObject], written: WriteResult) -> list[KubeObject]:
    """The objects under the namespace and name the store gave them (generateName)."""
    named: list[KubeObject] = []
    for obj, status in zip(objects, written.objects, strict=False):
        meta = msgspec.structs.replace(obj.metadata, name=status.name, namespace=status.namespace)
        named.append(msgspec.structs.replace(obj, metadata=meta))
    return named


def _waiting(
    objects: Sequence[KubeObject], reported: Collection[str], scheduler_name: str
) -> list[PodOutcome]:
    """The pending members of pod groups that were never tried (the queue held them: the group
    is not in the dump, or has fewer pods than its minCount), reported as pending with the
    queue's reason, ``waiting for pod group ml/train: 5 of 8 pods exist``."""
    groups = {
        namespaced_key(o.metadata.namespace, o.metadata.name): o
        for o in objects
        if isinstance(o, PodGroup)
    }
    members: dict[str, list[Pod]] = {}
    exist: dict[str, int] = {}
    for obj in objects:
        if not isinstance(obj, Pod) or (key := pod_group_key(obj)) is None:
            continue
        if is_pending(obj, scheduler_name) and not obj.spec.scheduling_gates:
            members.setdefault(key, []).append(obj)
            exist[key] = exist.get(key, 0) + 1
        elif obj.spec.node_name and holds_resources(obj):
            exist[key] = exist.get(key, 0) + 1
    outcomes = []
    for key, pods in members.items():
        group = groups.get(key)
        if group is None:
            message = f"waiting for pod group {key}: the group does not exist"
        else:
            message = f"waiting for pod group {key}: {exist[key]} of {min_count(group)} pods exist"
        for pod in pods:
            info = PodInfo(pod)
            if info.key not in reported:
                outcomes.append(PodOutcome(info, None, message, 0, ScheduleResult(message=message)))
    return outcomes


def _gated(
    objects: Sequence[KubeObject], written: WriteResult, scheduler_name: str
) -> list[PodOutcome]:
    """The pending pods the scheduler never tries (their scheduling gates), reported as pending
    with the gates named; each under the name the store gave it (generateName)."""
    outcomes = []
    for obj, status in zip(objects, written.objects, strict=False):
        if isinstance(obj, Pod) and obj.spec.scheduling_gates and is_pending(obj, scheduler_name):
            meta = msgspec.structs.replace(
                obj.metadata, name=status.name, namespace=status.namespace
            )
            gates = ", ".join(g.name for g in obj.spec.scheduling_gates)
            message = f"{SCHEDULING_GATED_MESSAGE}: {gates}"
            info = PodInfo(msgspec.structs.replace(obj, metadata=meta))
            outcomes.append(PodOutcome(info, None, message, 0, ScheduleResult(message=message)))
    return outcomes


def simulate(
    objects: Sequence[KubeObject],
    config: SchedulerConfig,
    plugins: PluginSet,
    *,
    seed: int | None = None,
    explain: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[PodOutcome]:
    """Schedule every pending pod of ``objects``; one outcome per pod, in the order of its last
    attempt.

    Raises:
        SimulationError: the store rejected the dump (each bad object named).
    """
    return trio.run(
        lambda: _simulate(objects, config, plugins, seed=seed, explain=explain, progress=progress),
        clock=_clock(plugins),
    )


def _clock(plugins: PluginSet) -> trio.testing.MockClock:
    """Virtual time that jumps as soon as every task waits; with extenders, real time that
    jumps only once every task has waited longer than the slowest extender may take, so an
    HTTP call in flight is never timed out by a jump (a hung one still times out)."""
    if not plugins.extenders:
        return trio.testing.MockClock(autojump_threshold=0)
    longest = max(e.timeout_seconds for e in plugins.extenders)
    return trio.testing.MockClock(rate=1.0, autojump_threshold=longest + 0.5)
