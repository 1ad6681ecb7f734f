"""A gang's decisions: folding its members in, the nominations they see, its preemption's
outcome and what its members are told (issue 24).

The scheduler (:mod:`podium.actors.cycle.scheduler`) decides a gang's members one after another
on one snapshot, each placement folded in
(:func:`~podium.actors.cycle.steps.fold_member`) and taken back out when the
group is not placed (:func:`undo`). When fewer members fit than the group needs and preemption
is on, it looks for victims so that the whole group fits, all or nothing:

1. *Plan*, on the snapshot as the attempt left it (its placed members folded in): for each
   member that did not fit, in order, pod preemption's steps as a lone pod takes them
   (:func:`~podium.actors.framework.preemption.search_preemption`, the extenders' preempt
   verbs, ``pickOneNodeForPreemption``: victims of lower priority than the member, the fewest
   PodDisruptionBudget violations, ...), never evicting its own members
   (:func:`~podium.actors.framework.preemption.same_group`) and another placed gang only whole
   (:class:`~podium.actors.framework.preemption.PreemptionUnits`), each member's victims
   chosen against the budgets the earlier ones' left; the victims are taken off their nodes
   and the member folded in before the next member's turn. The plan stops when enough members have a
   node, or when the members left cannot make up the difference.
2. *Check*, when the plan gave ``min_count - bound`` members a node: on the snapshot as it was
   before the attempt, with every victim taken off, every member is decided again, one after
   another, each placement folded in, as the retry will decide them (each seeing the others'
   nominations until it is placed: :func:`nominated_with`). Only when enough fit is anything
   evicted.
3. *Carry out*: one store transaction (``Evict`` with ``group``) evicts every victim and
   nominates every member the plan placed to its node; the group goes back to the queue as
   one unit, backed off, and is decided whole again once the victims are gone.

Otherwise nothing is evicted, and each member that did not fit is told why preemption cannot
help it, in Kubernetes' words (``preemption: 0/10 nodes are available: ...``), with a word for
the group when preemption would place some but not enough (:attr:`GangPreemption.note`).

A placed gang is a victim whole or not at all (KEP-5710's preemption unit): when one of its
members would be a victim, every member, on whatever node, is, and only when each is of a lower
priority than the member preempting; so no gang is ever left partly running. The members of
``basic`` groups are ordinary pods and may be victims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.nominated import NominatedPods
from podium.actors.framework.snapshot import ClusterObjects, Snapshot
from podium.actors.mail.messages import GangBatch

__all__ = [
    "GANG_LISTED",
    "GangPreemption",
    "gang_message",
    "member_nominations",
    "nominated_with",
    "preemption_note",
    "undo",
]

GANG_LISTED = 3
"""Members that did not fit a gang's message names, before "and N more"."""


def gang_message(
    gang: GangBatch,
    tried: int,
    fit: int,
    unfit: Sequence[tuple[str, str]],
    *,
    note: str = "",
) -> str:
    """What every member of a gang that was not placed is told: ``pod group ml/train: 6 of 8
    members fit, minCount 8; ml/worker-6: 0/10 nodes are available: ... preemption: 0/10
    nodes are available: ...`` (the first :data:`GANG_LISTED` members that did not fit, each
    with its FitError as a pod's message reads, then how many more), then ``note`` (the
    group's preemption, :func:`preemption_note`)."""
    head = f"pod group {gang.key}: {fit} of {tried} members fit, minCount {gang.min_count}"
    if gang.bound:
        head += f" ({gang.bound} bound already)"
    parts = [head]
    parts += [f"{key}: {message}" for key, message in unfit[:GANG_LISTED]]
    if len(unfit) > GANG_LISTED:
        parts.append(f"and {len(unfit) - GANG_LISTED} more")
    if note:
        parts.append(note)
    return "; ".join(parts)


def preemption_note(victims: int, fit: int, needed: int) -> str:
    """The group's word when preemption would place some of its members but not enough:
    ``preemption: evicting 2 pods would let 3 of the 4 members needed fit; nothing was
    evicted``."""
    pods = "pod" if victims == 1 else "pods"
    return (
        f"preemption: evicting {victims} {pods} would let {fit} of the {needed} members "
        "needed fit; nothing was evicted"
    )


@dataclass(slots=True)
class GangPreemption:
    """What a gang's preemption decided.

    Attributes:
        members: member key -> member, every member decided.
        evict: carry it out: every needed member fits once ``victims`` are gone.
        nodes: member key -> the node the plan gave it (the members the attempt placed, and
            those preemption found a node for): each is nominated there when it is carried
            out.
        victims: member key -> the pods to evict on its node, most important first.
        clear: pods that are not members, nominated to a chosen node with a lower priority
            than the member that goes there: their nominations are cleared.
        parts: member key -> its ``preemption: ...`` part, for the members preemption found
            no node for.
        note: the group's word when nothing is evicted although some members found victims
            (:func:`preemption_note`); "" otherwise.
    """

    members: dict[str, PodInfo] = field(default_factory=dict)
    evict: bool = False
    nodes: dict[str, str] = field(default_factory=dict)
    victims: dict[str, tuple[PodInfo, ...]] = field(default_factory=dict)
    clear: dict[str, PodInfo] = field(default_factory=dict)
    parts: dict[str, str] = field(default_factory=dict)
    note: str = ""

    @property
    def evicted(self) -> list[PodInfo]:
        """Every victim, member by member."""
        return [v for victims in self.victims.values() for v in victims]


def member_nominations(members: Iterable[PodInfo]) -> dict[str, tuple[PodInfo, str]]:
    """Member key -> (member, node) for the members nominated to a node (an earlier
    preemption of their group), in order."""
    return {
        m.key: (m, m.pod.status.nominated_node_name)
        for m in members
        if m.pod.status.nominated_node_name
    }


def nominated_with(
    base: NominatedPods | None, members: Mapping[str, tuple[PodInfo, str]]
) -> NominatedPods | None:
    """The nominations a member of a gang is decided with: ``base`` (the queue's, which leaves
    out the pods in flight: the whole gang) and the gang's own members not placed yet, each
    on the node its group's preemption nominated it to. So the room a preemption made for
    the third member is not taken by the first; ``base`` itself when no member is nominated
    (a new object otherwise: the queue's view is never changed)."""
    if not members:
        return base
    view = NominatedPods()
    if base is not None:
        for node, pod in base:
            view.add(pod, node)
    for pod, node in members.values():
        view.add(pod, node)
    return view


def undo(snapshot: Snapshot, before: dict[str, NodeInfo], objects: ClusterObjects) -> None:
    """Take a gang's changes back out of the snapshot: each node as before its first change,
    the objects as before any volume decision (the cache assumed none of them); ``before`` is
    emptied."""
    for info in before.values():
        snapshot.replace_node_info(info)
    before.clear()
    snapshot.objects = objects
