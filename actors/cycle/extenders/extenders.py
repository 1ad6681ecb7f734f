"""The extenders of a policy, called where v1.14 calls them: filter, prioritize, preempt, bind.

Kubernetes counterparts, at v1.14:

- pkg/scheduler/core/generic_scheduler.go ``findNodesThatFit``: after the predicates, each
  interested extender with a filter verb in turn narrows the feasible nodes; the nodes it
  fails and their messages join the FitError (one reason each, the message verbatim); an
  empty list stops the loop; an error fails the attempt, or skips the extender when it is
  ``ignorable``;
- ``PrioritizeNodes``: every interested extender with a prioritize verb is called
  concurrently; each score times the extender's weight is added to the node's total; an
  error is ignored (always: "Prioritization errors from extender can be ignored"), and so are
  hosts that were not sent;
- ``Schedule``: with one feasible node left no priority and no extender prioritize runs;
- ``Preempt`` / ``processPreemptionWithExtenders``: each interested extender with a preempt
  verb in turn replaces the candidate nodes and victims with its answer (so it may veto a
  node, or a victim); an error is fatal to this preemption unless ``ignorable``;
- pkg/scheduler/factory/factory.go ``getBinderFunc`` and scheduler.go ``bind``: the first
  extender with a bind verb binds the pods it is interested in instead of the default binder;
  a failed bind forgets the assumed pod and requeues it.

Where Podium checks more than v1.14 (docs/differences.md): a filter reply naming a node that
was not sent is an :class:`ExtenderError` (v1.14 looked the name up in its cache and would
place the pod on a node the predicates rejected, or crash on an unknown one); a preempt reply
naming an unknown node or pod is one too (v1.14 errors on the pod, crashes on the node); the
preempt reply's ``NumPDBViolations`` is kept (v1.14 dropped it, later versions keep it).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from types import TracebackType

import httpx
import msgspec
import trio

from podium.actors.cycle.extenders.client import Call, ExtenderError, HTTPExtender
from podium.actors.framework.interface import fit_error_message
from podium.actors.framework.nodeinfo import PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.preemption import (
    DisruptionBudget,
    FitCheck,
    PreemptionResult,
    PreemptionSearch,
    Spared,
    Victims,
    finish_preemption,
    more_important_pod,
    search_preemption,
    with_whole_gangs,
)
from podium.actors.framework.result import ScheduleResult
from podium.actors.framework.snapshot import Snapshot
from podium.protocol.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderConfig,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriority,
    MetaPod,
    MetaVictims,
    NodeList,
)
from podium.protocol.extender import Victims as WireVictims

__all__ = ["NO_EXTENDERS", "Extenders"]

log = logging.getLogger("podium.extenders")


class Extenders:
    """The extenders in policy order, each with its HTTP client; shared by the actors that
    call them (a set of connection pools, like a logger: no scheduling state).

    Use as an async context manager (the supervisor does): leaving it closes the pools.

    Args:
        configs: the extenders, in order.
        transport: one httpx transport for every extender instead of the network (tests).
    """

    def __init__(
        self,
        configs: Sequence[ExtenderConfig] = (),
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.configs = tuple(configs)
        self.extenders = tuple(HTTPExtender(c, transport=transport) for c in self.configs)
        # factory.go getBinderFunc: the first extender with a bind verb (validation allows one).
        self.binder = next((e for e in self.extenders if e.config.bind_verb), None)

    def __bool__(self) -> bool:
        return bool(self.extenders)

    async def __aenter__(self) -> Extenders:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection pool."""
        with trio.CancelScope(shield=True):
            for extender in self.extenders:
                await extender.aclose()

    # ------------------------------------------------------------------ filter

    async def filter(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        result: ScheduleResult,
        feasible: list[int],
        *,
        explain: bool = False,
    ) -> tuple[ScheduleResult, list[int]]:
        """Narrow the predicates' ``feasible`` rows with the filter verbs (v1.14
        ``findNodesThatFit``'s extender loop).

        Returns:
            A new result (``result`` is not changed) with the failed nodes' reasons, the
            FitError when no node is left, and the calls made, and the rows still feasible;
            on a non-ignorable error an error result (``error`` set, the extender's message)
            and no rows.
        """
        active = [e for e in self.extenders if e.config.filter_verb and e.is_interested(pod)]
        if not feasible or not active:
            return result, feasible
        infos = snapshot.node_infos
        rows = {infos[row].name: row for row in feasible}
        names = list(rows)
        # Built here, then handed to one new result: the predicates' result is a value.
        reasons = Counter(result.reasons)
        failed_nodes = dict(result.failed)
        calls: list[Call] = list(result.extender_calls)
        for extender in active:
            try:
                passing, failed = await self._filter_one(extender, pod, snapshot, names, calls)
            except ExtenderError as exc:
                if _skipped(extender, exc):
                    continue
                error = ScheduleResult(message=str(exc), error=True, extender_calls=tuple(calls))
                return error, []
            for node, message in failed.items():
                reasons[message] += 1
                if explain:
                    reason = f"extender {extender.name}: {message}"
                    failed_nodes[node] = (*failed_nodes.get(node, ()), reason)
            names = passing
            if not names:
                break
        kept = [rows[name] for name in names]
        narrowed = msgspec.structs.replace(
            result,
            feasible=len(kept),
            reasons=reasons,
            failed=failed_nodes,
            feasible_nodes=tuple(names) if explain else result.feasible_nodes,
            message=result.message if kept else fit_error_message(len(snapshot), reasons),
            extender_calls=tuple(calls),
        )
        return narrowed, kept

    async def _filter_one(
        self,
        extender: HTTPExtender,
        pod: PodInfo,
        snapshot: Snapshot,
        names: list[str],
        calls: list[Call],
    ) -> tuple[list[str], dict[str, str]]:
        sent = set(names)
        cache_capable = extender.config.node_cache_capable

        def only_sent(reply: ExtenderFilterResult) -> None:
            for name in reply.passing(cache_capable) or ():
                if name not in sent:
                    raise ExtenderError(
                        f"extender {extender.name}: filter answered node {name!r}, which it was not sent"
                    )

        reply = await extender.call(
            extender.config.filter_verb,
            _args(extender, pod, snapshot, names),
            ExtenderFilterResult,
            calls,
            only_sent,
        )
        passing = reply.passing(cache_capable) or []
        return list(dict.fromkeys(passing)), dict(reply.failed_nodes or {})

    # ------------------------------------------------------------------ prioritize

    async def prioritize(
        self, pod: PodInfo, snapshot: Snapshot, feasible: Sequence[int], calls: list[Call]
    ) -> tuple[dict[str, int], dict[str, dict[str, int]]] | None:
        """Call every interested extender's prioritize verb at once (v1.14 ``PrioritizeNodes``).

        Returns:
            node -> the sum of score x weight over the extenders, and extender -> node ->
            score (for explain); None when no extender prioritizes this pod.
        """
        active = [e for e in self.extenders if e.config.prioritize_verb and e.is_interested(pod)]
        if not active or not feasible:
            return None
        names = [snapshot.node_infos[row].name for row in feasible]
        combined: dict[str, int] = defaultdict(int)
        per_extender: dict[str, dict[str, int]] = {}

        async def one(extender: HTTPExtender) -> None:
            try:
                reply = await extender.call(
                    extender.config.prioritize_verb,
                    _args(extender, pod, snapshot, names),
                    list[HostPriority],
                    calls,
                )
            except ExtenderError as exc:
                # v1.14: "Prioritization errors from extender can be ignored, let k8s/other
                # extenders determine the priorities".
                log.warning("extender %s: prioritize ignored: %s", extender.name, exc)
                return
            weight = extender.config.weight
            scores = per_extender.setdefault(extender.name, {})
            for entry in reply:
                combined[entry.host] += entry.score * weight
                scores[entry.host] = entry.score

        async with trio.open_nursery() as nursery:
            for extender in active:
                nursery.start_soon(one, extender)
        return dict(combined), per_extender

    # ------------------------------------------------------------------ preempt

    async def preempt(
        self,
        pod: PodInfo,
        snapshot: Snapshot,
        unresolvable: Collection[str],
        fits: FitCheck,
        *,
        nominated: NominatedPods | None = None,
        calls: list[Call] | None = None,
        budgets: Sequence[DisruptionBudget] | None = None,
        spared: Spared | None = None,
    ) -> PreemptionResult:
        """v1.14 ``Preempt`` with ``processPreemptionWithExtenders`` between the search for
        victims and the pick of a node. A non-ignorable extender error ends this preemption
        with no node (v1.14 returns the error and the scheduler preempts nothing).
        ``budgets`` and ``spared``: as :func:`search_preemption` takes them (a pod group's
        members, one after another)."""
        search = search_preemption(
            pod, snapshot, unresolvable, fits, budgets=budgets, spared=spared
        )
        active = [e for e in self.extenders if e.config.preempt_verb and e.is_interested(pod)]
        if search.done is None and search.candidates and active:
            candidates: Mapping[str, Victims] = search.candidates
            for extender in active:
                try:
                    candidates = await self._preempt_one(
                        extender, pod, snapshot, candidates, [] if calls is None else calls
                    )
                except ExtenderError as exc:
                    if _skipped(extender, exc):
                        continue
                    log.error("error preempting victims to make room for %s: %s", pod.key, exc)
                    return PreemptionResult()
                if not candidates:
                    break
            # An extender may hand back part of a placed gang: the gang goes whole or not at all.
            search = PreemptionSearch(
                candidates={n: with_whole_gangs(v, search.units) for n, v in candidates.items()},
                unfit=search.unfit,
                potential=search.potential,
            )
        return finish_preemption(pod, snapshot, search, nominated=nominated)

    async def _preempt_one(
        self,
        extender: HTTPExtender,
        pod: PodInfo,
        snapshot: Snapshot,
        candidates: Mapping[str, Victims],
        calls: list[Call],
    ) -> dict[str, Victims]:
        if extender.config.node_cache_capable:
            args = ExtenderPreemptionArgs(
                pod=pod.pod,
                node_name_to_meta_victims={
                    node: MetaVictims(
                        pods=[MetaPod(uid=p.pod.metadata.uid) for p in v.pods],
                        num_pdb_violations=v.num_pdb_violations,
                    )
                    for node, v in candidates.items()
                },
            )
        else:
            args = ExtenderPreemptionArgs(
                pod=pod.pod,
                node_name_to_victims={
                    node: WireVictims(
                        pods=[p.pod for p in v.pods], num_pdb_violations=v.num_pdb_violations
                    )
                    for node, v in candidates.items()
                },
            )
        reply = await extender.call(
            extender.config.preempt_verb, args, ExtenderPreemptionResult, calls
        )
        answer: dict[str, Victims] = {}
        # v1.14 convertToNodeToVictims: every node and pod named must be in the snapshot.
        for node, meta in (reply.node_name_to_meta_victims or {}).items():
            info = snapshot.get(node)
            if info is None or info.node is None:
                raise ExtenderError(
                    f"extender: {extender.name} claims to preempt on node: {node} but the node is not found in nodeNameToInfo map"
                )
            # The victims sent for the node too: a placed gang's members on other nodes.
            sent = candidates[node].pods if node in candidates else ()
            by_uid = {p.pod.metadata.uid: p for p in (*info.pods, *sent)}
            victims: list[PodInfo] = []
            for meta_pod in meta.pods:
                found = by_uid.get(meta_pod.uid)
                if found is None:
                    raise ExtenderError(
                        f"extender: {extender.name} claims to preempt pod (UID: {meta_pod.uid}) on node: {node}, but the pod is not found on that node"
                    )
                victims.append(found)
            victims.sort(key=functools.cmp_to_key(_compare))
            answer[node] = Victims(tuple(victims), meta.num_pdb_violations)
        # Keep the scheduler's node order (the pick's last tie-break), not the reply's.
        return {node: answer[node] for node in candidates if node in answer} | {
            node: victims for node, victims in answer.items() if node not in candidates
        }

    # ------------------------------------------------------------------ bind

    async def bind_all(
        self, pods: Sequence[tuple[PodInfo, str]]
    ) -> tuple[dict[str, str], dict[str, list[Call]]]:
        """Bind every ``(pod, node)`` the binding extender is interested in, concurrently.

        Returns:
            uid -> why, for the pods it did not bind; uid -> the calls made (for traces).
        """
        refused: dict[str, str] = {}
        calls: dict[str, list[Call]] = {}

        async def one(pod: PodInfo, node: str) -> None:
            uid = pod.pod.metadata.uid
            why = await self.bind(pod, node, calls.setdefault(uid, []))
            if why is not None:
                refused[uid] = why

        async with trio.open_nursery() as nursery:
            for pod, node in pods:
                if self.binds(pod):
                    nursery.start_soon(one, pod, node)
        return refused, calls

    def binds(self, pod: PodInfo) -> bool:
        """Whether an extender binds ``pod`` (v1.14 ``getBinderFunc``)."""
        return self.binder is not None and self.binder.is_interested(pod)

    async def bind(self, pod: PodInfo, node: str, calls: list[Call]) -> str | None:
        """Ask the binding extender to bind ``pod`` to ``node`` (v1.14 ``HTTPExtender.Bind``).

        Returns:
            None when it bound the pod, else why not (the error or the reply's ``Error``).
        """
        assert self.binder is not None
        args = ExtenderBindingArgs(
            pod_name=pod.name, pod_namespace=pod.namespace, pod_uid=pod.pod.metadata.uid, node=node
        )
        try:
            await self.binder.call(self.binder.config.bind_verb, args, ExtenderBindingResult, calls)
        except ExtenderError as exc:
            return str(exc)
        return None


NO_EXTENDERS = Extenders()
"""The empty set: what an actor calls when the policy names no extender."""


def _skipped(extender: HTTPExtender, exc: ExtenderError) -> bool:
    """Whether a failed call is skipped (an ``ignorable`` extender; v1.14's log line)."""
    if extender.config.ignorable:
        log.warning(
            "skipping extender %s as it returned error %s and has ignorable flag set",
            extender.name,
            exc,
        )
    return extender.config.ignorable


def _compare(a: PodInfo, b: PodInfo) -> int:
    """The most important victim first, as the core orders victims (``MoreImportantPod``)."""
    if more_important_pod(a, b):
        return -1
    return 1 if more_important_pod(b, a) else 0


def _args(
    extender: HTTPExtender, pod: PodInfo, snapshot: Snapshot, names: list[str]
) -> ExtenderArgs:
    """v1.14 ExtenderArgs: node names for a nodeCacheCapable extender, else the nodes."""
    if extender.config.node_cache_capable:
        return ExtenderArgs(pod=pod.pod, node_names=names)
    nodes = []
    for name in names:
        info = snapshot.get(name)
        if info is not None and info.node is not None:
            nodes.append(info.node)
    return ExtenderArgs(pod=pod.pod, nodes=NodeList(items=nodes))
