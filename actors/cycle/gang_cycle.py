"""The gang cycle: a batch of gangs decided, each all or nothing, and a gang's preemption and
dry run (issue 24). :class:`GangCycle` is the part of the scheduler
(:class:`~podium.actors.cycle.scheduler.Scheduler`, which subclasses it) that decides a
Popped batch with ``groups``; the steps it shares with a batch of pods are
:class:`~podium.actors.cycle.steps.CycleSteps`, and the pure parts (folding a member in, the
nominations it sees, its messages) are :mod:`podium.actors.cycle.gangs`.

A gang (one of a Popped batch's ``groups``, all the members its unit holds; a batch of gangs
holds the units next in queue order up to ``batch_max_pods``, the first one whole whatever its
size) is decided as a batch of pods is (:mod:`podium.actors.cycle.scheduler`), one member after
another on one snapshot with every predicate, priority, extender and volume rule a lone pod
gets, each placement folded in before the next, but all or nothing,
with no time bound, and with a preemption of its own (all or nothing too). Members an earlier
preemption of the group nominated are each decided seeing the other members' nominations until
those are placed (:func:`~podium.actors.cycle.gangs.nominated_with`: the queue's view leaves
out the pods in flight, the whole gang). The folds :mod:`podium.actors.queue.batching`
describes for a batch of pods are a gang's too: pod (anti-)affinity and spreading keep their
counts against the snapshot's journal of node changes and the NodeInfo objects, which a fold
changes like any other node change (the next member sees the earlier ones: the actor tests place members with
anti-affinity to each other on distinct nodes); and a member's volume decision is folded into
the snapshot's objects (:func:`~podium.actors.plugins.volume_binding.fold_volume_decision`,
the claims bound and volumes taken as the cache's assume makes them), so the next member's
claims do not pick the same volume. Then:

- at least ``min_count - bound`` placed: its folds stay, and it is settled with the batch's
  other gangs that fit (:meth:`GangCycle._settle`): one Assume with ``atomic`` whose ``units``
  make each gang all or none, then for each gang the cache took GroupPlaced to the queue and
  its members that did not fit requeued as ordinary unschedulable pods (the group has its
  minCount), and one BindBatch whose requests carry their group (the binder's bindings carry
  it, and the store binds each group in one transaction or refuses it whole, inside its one
  commit); a gang the cache refuses, and every gang after it (decided with its folds in), has
  its folds undone (last gang first) and is requeued as one unit (conflict, or error);
- fewer: with preemption on (and no member's attempt an error), the gang's preemption
  (:mod:`podium.actors.cycle.gangs`: a plan member by member as pod preemption picks, a
  lower gang evicted whole or not at all, then a check that every needed member fits once the victims are
  gone) may evict, in one Evict whose ``group`` nominates every member it placed. Then every
  fold is undone (each node put back as before the gang's first fold on it, the objects as
  before), nothing is assumed or bound, the group goes back to the queue as one unit
  (RequeueGroup, backed off: after an eviction it is decided whole again once the victims are
  gone) and every member's condition says why (:func:`gang_message`: ``pod group ml/train: 6
  of 8 members fit, minCount 8; ml/worker-6: 0/10 nodes are available: ... preemption: 0/10
  nodes are available: ...``, each member's preemption part as a pod's message has it).

The gangs of one batch are decided one after another, each all or nothing as above before the
next is decided (a gang placed keeps its folds, as the cache's assume will make them; a gang
not placed has its folds undone), so each sees the snapshot a batch of its own would have:
exactly the placements one gang a batch gives (tests/property/test_gangs.py compares the two).
Only then are the gangs placed assumed and bound, together: one Assume round trip and one
BindBatch for the batch, where each gang used to pay its own. A gang whose preemption
writes to the store (evicts, or clears its members' nominations) ends the batch: when it is the
batch's first, it is carried out and the gangs after it go back to the queue (GiveBack); when
it is not, nothing is written and it goes back with them, to come first in the next batch, as
a pod's preemption does. The gangs not decided once ``batch_max_seconds`` has passed go back
too.

Each member still counts as one attempt in the per-pod metrics; the gang's attempt counts in
``podium_pod_group_attempts_total{result}`` and is one ``pod_group_attempt`` span.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec
import trio

from podium.actors.cycle.explain import hints
from podium.actors.cycle.gangs import (
    GANG_LISTED,
    GangPreemption,
    gang_message,
    member_nominations,
    nominated_with,
    preemption_note,
    undo,
)
from podium.actors.cycle.steps import (
    CycleSteps,
    Outcome,
    fold_member,
    observe_stages,
    record_stages,
    record_unschedulable,
    victim_refs,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.preemption import (
    PREEMPT_NEVER,
    PREEMPTION_PREFIX,
    DisruptionBudget,
    PredicateFitCheck,
    PreemptionResult,
    Spared,
    disruption_budgets,
    lowest_evictable_priority,
    pod_eligible_to_preempt_others,
    same_group,
    spend_budgets,
    without_victims,
    without_victims_anywhere,
)
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.mail.messages import (
    Assume,
    AssumeReply,
    AssumeStatus,
    BindBatch,
    BindDone,
    BindRequest,
    Decision,
    ExplainedGroup,
    ExplainGroup,
    GangBatch,
    GroupAttempt,
    GroupPlaced,
    Popped,
    RequeueGroup,
)
from podium.actors.runtime.mailbox import ask, send
from podium.actors.runtime.tracing import ASSUME
from podium.protocol import metrics
from podium.protocol.wire import Hint
from podium.store.mail import (
    Evict,
    EvictResult,
    Preemptor,
    StoreFailure,
)

__all__ = ["GangCycle"]

log = logging.getLogger("podium.scheduler")


class GangCycle(CycleSteps):
    """The scheduler's gang cycle (see the module docstring); the scheduler subclasses it and
    provides :class:`~podium.actors.cycle.steps.CycleSteps`."""

    async def _explain_group(self, msg: ExplainGroup) -> ExplainedGroup:
        """A group's members decided as its attempt would (dry, every node's verdict), the
        hints for those that do not fit, and, when too few fit, what its preemption would
        evict; the snapshot is left as it was."""
        needed = 0 if msg.min_count is None else max(msg.min_count - msg.bound, 0)
        found: dict[str, list[Hint]] = {}
        preemption: GangPreemption | None = None
        async with self._lock:
            snapshot = await self._refresh()
            objects = snapshot.objects
            before: dict[str, NodeInfo] = {}
            nominations = member_nominations(msg.members)
            try:
                decisions = await self._decide_dry(
                    msg.members, snapshot, before, nominations, None, hints_to=found
                )
                fit = sum(1 for d in decisions if d.node is not None)
                errors = any(d.result.error for d in decisions)
                if fit < needed and self._preemption and not errors:
                    preemption = await self._gang_preemption(
                        msg.members, decisions, needed, snapshot, before, objects, None
                    )
            finally:
                undo(snapshot, before, objects)
        evicting = preemption is not None and preemption.evict
        parts: Mapping[str, str] = {}
        note = ""
        if preemption is not None and not evicting:
            parts, note = preemption.parts, preemption.note
        told: list[Decision] = []
        for member, decision in zip(msg.members, decisions, strict=True):
            part = parts.get(member.key)
            if part and decision.result.message:
                result = msgspec.structs.replace(
                    decision.result, message=_with_part(decision.result.message, part)
                )
                decision = msgspec.structs.replace(decision, result=result)
            told.append(decision)
        message = None
        if fit < needed:
            gang = GangBatch(
                key=msg.key,
                min_count=msg.min_count or 0,
                bound=msg.bound,
                members=len(msg.members),
            )
            unfit = [
                (m.key, d.result.message or "")
                for m, d in zip(msg.members, told, strict=True)
                if d.node is None
            ]
            unfit.sort(key=lambda entry: entry[0] not in parts)
            message = gang_message(gang, len(told), fit, unfit, note=note)
        preempted: dict[str, list[str]] = {}
        if preemption is not None and evicting:
            preempted = {k: [v.key for v in vs] for k, vs in preemption.victims.items() if vs}
        return ExplainedGroup(
            decisions=told,
            hints=found,
            fit=fit,
            needed=needed,
            preempted=preempted,
            message=message,
        )

    async def _gangs(
        self,
        pods: list[Popped],
        gangs: list[GangBatch],
        popped_at: float,
        traces: contextlib.ExitStack,
    ) -> None:
        """Decide a batch of gangs one after another on one snapshot (refreshed once), each as
        :meth:`_gang` decides it: a gang placed keeps its folds (as the cache's assume will
        make them), and a gang not placed has every fold undone, before the next gang is
        decided, so each sees the snapshot a batch of its own would have. Then the gangs placed
        are settled together (:meth:`_settle`: one Assume, each gang its own all-or-nothing
        unit, and one BindBatch). The gangs not decided once ``batch_max_seconds`` has passed
        go back to the queue (GiveBack, not counted as attempts), and so do the ones after a
        gang whose preemption wrote to the store (see :meth:`_gang`)."""
        deadline = popped_at + self._batch_max_seconds
        async with self._lock:
            snapshot = await self._refresh()
            # The pop and the snapshot's refresh served every pod of the batch: each member's
            # attempt counts its share (as the assume's round trip).
            share = (trio.current_time() - popped_at) / len(pods)
            placed: list[_Placed] = []
            back: list[Popped] = []
            start = 0
            for n, gang in enumerate(gangs):
                if n and trio.current_time() >= deadline:
                    back = pods[start:]
                    break
                members = pods[start : start + gang.members]
                start += gang.members
                went = await self._gang(
                    members,
                    gang,
                    snapshot,
                    traces,
                    popped_at=popped_at if n == 0 else None,
                    share=share,
                    first=n == 0,
                )
                if isinstance(went, _Placed):
                    placed.append(went)
                elif went == "given_back":
                    back = pods[start - gang.members :]
                    break
                elif went == "end":
                    back = pods[start:]
                    break
            await self._settle(placed, snapshot)
            if back:
                await self._give_back(back)

    async def _gang(
        self,
        pods: list[Popped],
        gang: GangBatch,
        snapshot: Snapshot,
        traces: contextlib.ExitStack,
        *,
        popped_at: float | None,
        share: float,
        first: bool,
    ) -> _Placed | Literal["next", "end", "given_back"]:
        """Decide a gang's members one after another on ``snapshot``, each placement folded in
        before the next (its NodeInfo change, and its volume decision into the snapshot's
        objects), with no time bound; then all or nothing: at least ``min_count - bound``
        placed are kept (folds and all) for :meth:`_settle` to assume as one unit and bind in
        one transaction, else every fold is undone and the group requeued, after its
        preemption.

        ``popped_at``: when the batch was popped, for the batch's first gang (None for the
        others); ``share``: each member's share of the pop and refresh.

        Returns:
            the gang placed, for :meth:`_settle`; ``next`` when it was not; ``end`` when the gang's preemption wrote to the store (evicted, or
            cleared its members' nominations), which ends the batch (the gangs after it are
            decided on a refreshed snapshot in the next); ``given_back`` when it would have
            evicted but is not the batch's ``first``: nothing is written and the caller gives
            it back with the rest, so it comes first in the next batch, as pod preemption does
            (:meth:`_batch`).
        """
        needed = gang.min_count - gang.bound
        outcomes: list[Outcome] = []
        # Node -> its NodeInfo before the gang's first fold on it; the objects before any.
        before: dict[str, NodeInfo] = {}
        objects = snapshot.objects
        began = trio.current_time() if popped_at is None else popped_at
        # The members an earlier preemption of the group nominated: each member sees the
        # others' nominations until they are placed (the queue's view leaves the gang out).
        nominations = member_nominations(p.pod for p in pods)
        for i, popped in enumerate(pods):
            started = trio.current_time()
            attempt = traces.enter_context(
                self._tracing.attempt(
                    popped.pod.key,
                    links=popped.links,
                    arrived_at=popped.arrived_at,
                    popped_at=popped_at if i == 0 and popped_at is not None else started,
                    attempts=popped.attempts,
                )
            )
            decision = await self._decide(
                popped.pod,
                snapshot,
                dry=False,
                explain=self._explain_attempts,
                nominated=nominated_with(popped.nominated, nominations),
            )
            decided = trio.current_time()
            if attempt.sampled:
                record_stages(attempt, decision, started, decided)
            outcome = Outcome(popped, decision, attempt, started - share, finished=decided)
            if decision.node is not None:
                outcome.assumed = fold_member(snapshot, before, popped.pod, decision)
                nominations.pop(popped.pod.key, None)
            elif self._explain_attempts and not decision.result.error:
                outcome.hints = hints(popped.pod, decision.result, snapshot)
            outcomes.append(outcome)
        placed = [o for o in outcomes if o.decision.node is not None]
        if len(placed) >= needed:
            for o in outcomes:
                observe_stages(o.decision)
            return _Placed(gang, outcomes, placed, before, objects, began)
        preemption = None
        if self._preemption and not any(o.decision.result.error for o in outcomes):
            preemption = await self._gang_preemption(
                [o.popped.pod for o in outcomes],
                [o.decision for o in outcomes],
                needed,
                snapshot,
                before,
                objects,
                pods[0].nominated,
            )
        undo(snapshot, before, objects)
        writes = preemption is not None and (
            preemption.evict or any(p.pod.pod.status.nominated_node_name for p in pods)
        )
        if writes and not first:
            for o in outcomes:
                o.attempt.outcome("given_back")
            return "given_back"
        for o in outcomes:
            observe_stages(o.decision)
        result = await self._gang_unschedulable(gang, outcomes, len(placed), preemption)
        self._tracing.group_attempt(
            gang.key,
            members=len(pods),
            placed=0,
            result=result,
            start=began,
            end=trio.current_time(),
        )
        return "end" if writes else "next"

    def _would_preempt(self, pod: PodInfo) -> bool:
        """Whether a pod that fits nowhere would have preemption tried for it (on, and the
        pod's ``preemptionPolicy`` is not Never)."""
        return self._preemption and pod.pod.spec.preemption_policy != PREEMPT_NEVER

    async def _gang_unschedulable(
        self,
        gang: GangBatch,
        outcomes: list[Outcome],
        fit: int,
        preemption: GangPreemption | None,
    ) -> str:
        """Fewer members fit than the gang needs: none is placed. With a preemption that makes
        room for the whole group, its victims are evicted and the members nominated (one store
        transaction); either way the group goes back to the queue as one unit and every member
        is told why (:func:`gang_message`)."""
        unfit = [o for o in outcomes if o.decision.node is None]
        error = any(o.decision.result.error for o in unfit)
        why: Literal["error", "unschedulable"] = "error" if error else "unschedulable"
        evicted: set[str] = set()
        parts: Mapping[str, str] = {}
        note = ""
        if preemption is not None:
            if preemption.evict:
                evicted = await self._carry_out_gang(gang, preemption)
            else:
                parts, note = preemption.parts, preemption.note
                await self._clear_nominations([o.popped.pod for o in outcomes])
        told = [
            (
                o.popped.pod.key,
                _with_part(o.decision.result.message or "", parts.get(o.popped.pod.key)),
            )
            for o in unfit
        ]
        # The members preemption could not help first: they are what blocks the group.
        told.sort(key=lambda entry: entry[0] not in parts)
        message = gang_message(gang, len(outcomes), fit, told, note=note)
        plugins = frozenset().union(*(o.decision.result.failed_plugins for o in unfit))
        await send(
            self._queue,
            RequeueGroup(
                key=gang.key,
                pods=[o.popped.pod for o in outcomes],
                cycle=outcomes[0].popped.cycle,
                why=why,
                plugins=plugins,
            ),
        )
        now = trio.current_time()
        for o in outcomes:
            pod, result = o.popped.pod, o.decision.result
            await record_unschedulable(self._store, o, why, message)
            result = msgspec.structs.replace(result, message=message)
            o.decision = msgspec.structs.replace(o.decision, result=result)
            o.status = why
            o.finished = now
            if preemption is not None and evicted:
                o.preempted = [
                    v.key for v in preemption.victims.get(pod.key, ()) if v.key in evicted
                ]
        log.debug(
            "pod group %s: %d of %d members fit, fewer than needed", gang.key, fit, len(outcomes)
        )
        (
            metrics.POD_GROUP_ATTEMPTS_ERROR if error else metrics.POD_GROUP_ATTEMPTS_UNSCHEDULABLE
        ).inc()
        for o in outcomes:
            await self._report(o, group=_group_attempt(gang, len(outcomes), fit))
        return why

    async def _gang_preemption(
        self,
        members: Sequence[PodInfo],
        decisions: Sequence[Decision],
        needed: int,
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        objects: ClusterObjects,
        nominated: NominatedPods | None,
    ) -> GangPreemption:
        """Look for victims so that ``needed`` members fit (actors/cycle/gangs.py: plan, then
        check). ``snapshot`` holds the attempt's folds (``before``, ``objects``: as before
        them) and is left as it was before the attempt: every change undone, ``before``
        emptied."""
        try:
            plan = await self._plan_gang(members, decisions, needed, snapshot, before, nominated)
        finally:
            undo(snapshot, before, objects)
        if len(plan.nodes) < needed:
            if plan.victims:
                plan.note = preemption_note(len(plan.evicted), len(plan.nodes), needed)
            return plan
        fit = await self._check_gang(members, plan, snapshot, objects, nominated)
        if fit >= needed:
            plan.evict = True
        elif plan.evicted:
            plan.note = preemption_note(len(plan.evicted), fit, needed)
        return plan

    async def _plan_gang(
        self,
        members: Sequence[PodInfo],
        decisions: Sequence[Decision],
        needed: int,
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        nominated: NominatedPods | None,
    ) -> GangPreemption:
        """The plan: a node for each member that did not fit, one after another, as pod
        preemption picks it (victims taken off and the member folded in before the next),
        until ``needed`` members have one or the members left cannot make up the difference;
        then the ``preemption:`` part of each listed member it found no node for."""
        plan = GangPreemption(
            members={m.key: m for m in members},
            nodes={m.key: d.node for m, d in zip(members, decisions, strict=True) if d.node},
        )
        keys = {m.key for m in members}
        spared = same_group(members)
        budgets = disruption_budgets(snapshot)
        unfit = [(m, d) for m, d in zip(members, decisions, strict=True) if d.node is None]
        # Only pods below the highest unfit member's priority can be anyone's victims.
        top = max((m.priority for m, _ in unfit), default=None)
        lowest = lowest_evictable_priority(snapshot, spared, below=top)
        tried: set[str] = set()
        for i, (member, decision) in enumerate(unfit):
            if len(plan.nodes) >= needed or len(plan.nodes) + len(unfit) - i < needed:
                break
            tried.add(member.key)
            found = await self._member_preemption(
                member, decision, snapshot, nominated, budgets, spared, lowest
            )
            node = found.node
            if node is None:
                if found.message:
                    plan.parts[member.key] = found.message
                continue
            without_victims(snapshot, before, node, found.victims)
            fold_member(snapshot, before, member, msgspec.structs.replace(decision, node=node))
            budgets = spend_budgets(budgets, found.victims)
            plan.nodes[member.key] = node
            plan.victims[member.key] = found.victims
            for other in found.nominated_pods_to_clear:
                if other.key not in keys:
                    plan.clear[other.key] = other
        if len(plan.nodes) < needed:
            # Every listed member says why preemption cannot help it, as a pod's message would.
            for member, decision in unfit[:GANG_LISTED]:
                if member.key in tried:
                    continue
                found = await self._member_preemption(
                    member, decision, snapshot, nominated, budgets, spared, lowest
                )
                if found.node is None and found.message:
                    plan.parts[member.key] = found.message
        return plan

    async def _member_preemption(
        self,
        member: PodInfo,
        decision: Decision,
        snapshot: Snapshot,
        nominated: NominatedPods | None,
        budgets: Sequence[DisruptionBudget],
        spared: Spared,
        lowest: int | None,
    ) -> PreemptionResult:
        """Pod preemption for one member (v1.14 ``Preempt`` with the extenders' preempt verbs),
        sparing the members of gangs; without a fit check per node when no pod of a lower
        priority than the member may be evicted anywhere."""
        eligible, why = pod_eligible_to_preempt_others(member, snapshot)
        if not eligible:
            return PreemptionResult(message=PREEMPTION_PREFIX + why)
        unresolvable = await self._unresolvable(member, snapshot, decision, nominated)
        if lowest is None or member.priority <= lowest:
            return without_victims_anywhere(member, snapshot, unresolvable)
        return await self._extenders.preempt(
            member,
            snapshot,
            unresolvable,
            PredicateFitCheck(self._filters, nominated),
            nominated=nominated,
            budgets=budgets,
            spared=spared,
        )

    async def _check_gang(
        self,
        members: Sequence[PodInfo],
        plan: GangPreemption,
        snapshot: Snapshot,
        objects: ClusterObjects,
        nominated: NominatedPods | None,
    ) -> int:
        """How many members fit once the plan's victims are gone: each decided (dry) one
        after another, each placement folded in, each seeing the nominations the plan would
        give the others until it is placed, as the group's retry will decide them. The
        snapshot is left as it was."""
        before: dict[str, NodeInfo] = {}
        nominations = {m.key: (m, plan.nodes[m.key]) for m in members if m.key in plan.nodes}
        try:
            for key, victims in plan.victims.items():
                node = plan.nodes[key]
                without_victims(snapshot, before, node, victims)
            decisions = await self._decide_dry(members, snapshot, before, nominations, nominated)
        finally:
            undo(snapshot, before, objects)
        return sum(1 for d in decisions if d.node is not None)

    async def _decide_dry(
        self,
        members: Sequence[PodInfo],
        snapshot: Snapshot,
        before: dict[str, NodeInfo],
        nominations: dict[str, tuple[PodInfo, str]],
        nominated: NominatedPods | None,
        *,
        hints_to: dict[str, list[Hint]] | None = None,
    ) -> list[Decision]:
        """Decide ``members`` (dry) one after another as the group's attempt decides them: each
        placement folded into ``snapshot`` (``before``: each node before the first fold), each
        member seeing ``nominated`` and the ``nominations`` of the members not placed yet
        (emptied as they are placed). With ``hints_to`` (explain: every node's verdict), the
        hints for each member that does not fit, on the snapshot as it saw it."""
        explain = hints_to is not None
        decisions: list[Decision] = []
        for member in members:
            decision = await self._decide(
                member,
                snapshot,
                dry=True,
                explain=explain,
                nominated=nominated_with(nominated, nominations),
            )
            if decision.node is not None:
                fold_member(snapshot, before, member, decision)
                nominations.pop(member.key, None)
            elif hints_to is not None and not decision.result.error:
                hints_to[member.key] = hints(member, decision.result, snapshot)
            decisions.append(decision)
        return decisions

    async def _carry_out_gang(self, gang: GangBatch, plan: GangPreemption) -> set[str]:
        """Evict every victim and nominate every member the plan placed to its node, in one
        store transaction; clear the lower-priority nominations on those nodes. Returns the
        ``namespace/name`` of the pods evicted (none when the store refused: a member gone,
        re-created or bound meanwhile)."""
        by_key = {v.key: v for v in plan.evicted}
        entries = [
            (plan.members[key], node, list(plan.victims.get(key, ())))
            for key, node in plan.nodes.items()
        ]
        result = await self._evict_group(entries)
        evicted: set[str] = set()
        if isinstance(result, EvictResult):
            evicted = set(result.evicted)
            for victims in plan.victims.values():
                if victims:
                    metrics.PREEMPTION_ATTEMPTS.inc()
                    metrics.PREEMPTION_VICTIMS.observe(len(victims))
            log.info(
                "pod group %s preempted %s",
                gang.key,
                ", ".join(k for k in by_key if k in evicted) or "nothing",
            )
            for other in plan.clear.values():
                if other.pod.status.nominated_node_name:
                    await self._evict(other, "", [])
        else:
            log.info("pod group %s evicted nothing: %s", gang.key, result.message)
        return evicted

    async def _clear_nominations(self, members: Sequence[PodInfo]) -> None:
        """Clear the nominations of a group's members (an earlier preemption's, which no
        longer makes room for the whole group), in one store transaction."""
        nominated: list[tuple[PodInfo, str, list[PodInfo]]] = [
            (m, "", []) for m in members if m.pod.status.nominated_node_name
        ]
        if nominated:
            await self._evict_group(nominated)

    async def _evict_group(
        self, entries: Sequence[tuple[PodInfo, str, list[PodInfo]]]
    ) -> EvictResult | StoreFailure:
        """One Evict for a preemptor, or a group's members: each (member, node, victims)
        evicted for and nominated ("" clears), all in one transaction."""
        (first, node, victims), *rest = entries

        group = [
            Preemptor(
                namespace=m.namespace,
                name=m.name,
                uid=m.pod.metadata.uid,
                node=where,
                victims=victim_refs(chosen, where),
            )
            for m, where, chosen in rest
        ]
        return await ask(
            self._store,
            lambda r: Evict(
                namespace=first.namespace,
                name=first.name,
                uid=first.pod.metadata.uid,
                node=node,
                victims=victim_refs(victims, node),
                group=group,
                reply=r,
            ),
        )

    async def _settle(self, gangs: list[_Placed], snapshot: Snapshot) -> None:
        """Settle the batch's gangs that fit, together: one Assume holding each gang's placed
        members as one all-or-nothing unit, then, for every gang the cache took, GroupPlaced
        and its members that did not fit requeued as ordinary unschedulable pods, and one
        BindBatch whose requests carry their group (the store binds each group in one
        transaction or refuses it whole). The cache refuses a gang whole, and the gangs after
        it too (decided with its folds in): their folds are undone, last gang first, and each
        is requeued as one unit (conflict, or error). Metrics, reports and the
        ``pod_group_attempt`` span stay per gang; each member's attempt counts its share of
        the Assume's round trip."""
        if not gangs:
            return
        reserving = trio.current_time()
        assumptions = [o.assumption() for g in gangs for o in g.placed]
        assumed: AssumeReply = await ask(
            self._cache,
            lambda r: Assume(
                pods=assumptions,
                generation=snapshot.generation,
                reply=r,
                folded=True,
                atomic=True,
                units=[len(g.placed) for g in gangs],
            ),
        )
        reserved = trio.current_time()
        share = (reserved - reserving) / len(assumptions)
        statuses: list[list[AssumeStatus]] = []
        start = 0
        for g in gangs:
            statuses.append(assumed.statuses[start : start + len(g.placed)])
            start += len(g.placed)
            for o in g.placed:
                o.attempt.record(ASSUME, reserving, reserved)
                o.finished += share
        taken = next(
            (n for n, ss in enumerate(statuses) if any(s.status != "assumed" for s in ss)),
            len(gangs),
        )
        for g in reversed(gangs[taken:]):
            undo(snapshot, g.before, g.objects)
        results: list[str] = []
        for g, ss in zip(gangs[taken:], statuses[taken:], strict=True):
            results.append(await self._refused(g, ss, share))
        # The groups first, so that the queue counts them placed before anything else of them.
        for g in gangs[:taken]:
            await send(
                self._queue, GroupPlaced(key=g.gang.key, pods=[o.popped.pod for o in g.placed])
            )
        done_to, done = trio.open_memory_channel[BindDone](len(assumptions))
        binds: list[BindRequest] = []
        for g, ss in zip(gangs[:taken], statuses[:taken], strict=True):
            for o in g.outcomes:
                if o.decision.node is None:
                    await self._unfit_member(g.gang, o)
            for o, status in zip(g.placed, ss, strict=True):
                to = done_to if self._sync_binds else None
                bind = await self._reserved(
                    o, status, snapshot, g.before, share, to, group=g.gang.key
                )
                assert bind is not None  # every member was assumed
                binds.append(bind)
        if binds:
            await send(self._binder, BindBatch(requests=binds))
        for g in gangs[:taken]:
            metrics.POD_GROUP_ATTEMPTS_SCHEDULED.inc()
            log.debug(
                "pod group %s: %d of %d members placed",
                g.gang.key,
                len(g.placed),
                len(g.outcomes),
            )
            attempt = _group_attempt(g.gang, len(g.outcomes), len(g.placed), placed=True)
            for o in g.outcomes:
                await self._report(o, group=attempt)
        end = trio.current_time()
        for n, g in enumerate(gangs):
            scheduled = n < taken
            self._tracing.group_attempt(
                g.gang.key,
                members=len(g.outcomes),
                placed=len(g.placed) if scheduled else 0,
                result="scheduled" if scheduled else results[n - taken],
                start=g.began,
                end=end,
            )
        if self._sync_binds:
            for _ in binds:
                await done.receive()

    async def _unfit_member(self, gang: GangBatch, o: Outcome) -> None:
        """A member that did not fit in a gang placed without it: an ordinary unschedulable
        pod (the group has its minCount), whose message says why preemption was not tried."""
        result = o.decision.result
        if not result.error and result.message and self._would_preempt(o.popped.pod):
            note = f" preemption: not tried for a member of pod group {gang.key}."
            told = msgspec.structs.replace(result, message=result.message + note)
            o.decision = msgspec.structs.replace(o.decision, result=told)
        await self._unschedulable(o)

    async def _refused(self, g: _Placed, statuses: list[AssumeStatus], share: float) -> str:
        """A gang the cache did not assume (its folds already undone): requeued as one unit,
        ``error`` when the cache failed on one of its members, ``conflict`` otherwise; every
        member's attempt ends so. Returns the group attempt's result (``error``)."""
        refused = [s for s in statuses if s.status != "assumed"]
        error = any(s.status == "error" for s in refused)
        why: Literal["conflict", "error"] = "error" if error else "conflict"
        log.warning("pod group %s was not assumed: %s", g.gang.key, refused[0].message)
        await send(
            self._queue,
            RequeueGroup(
                key=g.gang.key,
                pods=[o.popped.pod for o in g.outcomes],
                cycle=g.outcomes[0].popped.cycle,
                why=why,
            ),
        )
        by_key = dict(zip((o.popped.pod.key for o in g.placed), statuses, strict=True))
        for o in g.outcomes:
            result = o.decision.result
            status = by_key.get(o.popped.pod.key)
            if status is not None:
                metrics.RESERVE_ERROR.observe(share)
            o.attempt.outcome(
                why,
                node=o.decision.node,
                nodes_examined=result.evaluated,
                nodes_feasible=result.feasible,
                message=status.message if status is not None else refused[0].message,
            )
            o.status = why
        metrics.POD_GROUP_ATTEMPTS_ERROR.inc()
        attempt = _group_attempt(g.gang, len(g.outcomes), len(g.placed))
        for o in g.outcomes:
            await self._report(o, group=attempt)
        return "error"


@dataclass(slots=True)
class _Placed:
    """A gang of the batch that fits, waiting for :meth:`GangCycle._settle`: its outcomes in
    member order, the placed ones, each node as before the gang's first fold on it and the
    snapshot's objects as before any (for undoing it), and when its attempt began."""

    gang: GangBatch
    outcomes: list[Outcome]
    placed: list[Outcome]
    before: dict[str, NodeInfo]
    objects: ClusterObjects
    began: float


def _with_part(message: str, part: str | None) -> str:
    """A member's FitError with the ``preemption:`` part its group's preemption gave it."""
    return f"{message} {part}" if part and message else message


def _group_attempt(
    gang: GangBatch, members: int, fit: int, *, placed: bool = False
) -> GroupAttempt:
    return GroupAttempt(
        key=gang.key,
        min_count=gang.min_count,
        bound=gang.bound,
        members=members,
        fit=fit,
        placed=placed,
    )
