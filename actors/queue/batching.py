"""Which pods a scheduling batch may carry together (pure, no actors).

The scheduler decides the pods of a batch one after another on one snapshot, folding each
decision into it (:func:`~podium.actors.cache.core.fold_assumed`, the NodeInfo change the
cache's assume makes), so a pod sees what it would have seen decided alone. Folding is exact
for everything a NodeInfo holds (resources, ports, pod counts, the pods with affinity, the
columns, which the equivalence classes follow by row version). What a fold does not carry
decides the rules here, and they err on the side of deciding alone:

- a pod with pod affinity or anti-affinity terms, or topology spread constraints: its verdict
  depends on other nodes' pods through per-snapshot state (affinity counts, spreading
  domains) and, once it is unschedulable, the queue moves it on other pods' binds;
- a pod with PersistentVolumeClaims: its volume decision is assumed in the cache's objects
  (claims bound, volumes taken), which the snapshot only sees after its next refresh.

Such a pod is decided in a batch of its own. The queue also hands out batches of one while
nominations exist (the nominated pods' view leaves out every pod in flight, and one pod at a
time only the one being decided) or unschedulable pods wait for an assigned pod to match their
affinity (a bind between two pops could move one ahead of the next). The scheduler ends a
batch itself after a pod whose preemption evicted pods or cleared nominations.

None of this applies to a batch of gangs (the queue hands out each gang's members whole, and
gangs share a batch only with gangs, up to ``max_pods`` and while no nomination exists nor
affinity waiter waits): the scheduler decides them with affinity and spreading counted against
the snapshot's journal, which sees each fold, folds each member's volume decision into the
snapshot's objects, and settles each gang (assumed, or every fold undone) before the next
(:mod:`podium.actors.cycle.scheduler`).
"""

from __future__ import annotations

from podium.protocol.objects import Pod

__all__ = ["decided_alone"]


def decided_alone(pod: Pod) -> bool:
    """Whether ``pod`` must be decided in a batch of its own (see the module docstring)."""
    spec = pod.spec
    affinity = spec.affinity
    if affinity is not None and (
        affinity.pod_affinity is not None or affinity.pod_anti_affinity is not None
    ):
        return True
    if spec.topology_spread_constraints:
        return True
    # Asked at every pop of every pod (give-backs included): no generator for a pod without
    # volumes (~1 us a call before, ~0.3 after).
    volumes = spec.volumes
    return bool(volumes) and any(v.persistent_volume_claim is not None for v in volumes)
