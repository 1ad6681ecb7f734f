"""How many pods a scheduling batch may carry together (pure, no actors).

The scheduler decides the pods of a batch one after another on one snapshot, folding each
decision into it as the cache's assume will make it, so a pod sees what it would have seen
decided alone after the earlier ones were bound:

- the NodeInfo change (:func:`~podium.actors.framework.snapshot.fold_assumed`): a new
  NodeInfo (resources, ports, pod counts, the pods with affinity), its column row stamped
  (the equivalence classes and the spreading counts follow rows by version, the spreading
  counts NodeInfos by identity too) and an entry in the snapshot's journal of node changes
  (against which the inter-pod affinity plugins keep their counts per class of incoming pods),
  so a pod with pod (anti-)affinity terms or topology spread constraints counts every earlier
  pod of its batch;
- the volume decision (:func:`~podium.actors.plugins.volume_binding.fold_volume_decision`):
  the claims bound and the volumes taken in the snapshot's objects, so the next pod's claims
  do not pick a volume an earlier one took.

So any pod may share a batch: with pod (anti-)affinity, spread constraints and claims (until
issue 27 each was decided in a batch of its own). What one pod at a time would give differs
only in what the queue does between two pops, so the queue hands out batches of one while

- nominations exist (the nominated pods' view leaves out every pod in flight, and one pod at a
  time only the one being decided), or
- an unschedulable pod waits for an assigned pod to match its affinity or spreading (a bind
  between two pops could move it ahead of the next pod).

A pod of a batch decided unschedulable after earlier pods of the batch were placed is not
moved by their binds (they arrive after its requeue, where one at a time they would have come
before its pop): the queue remembers each pod's batch
(:meth:`~podium.actors.queue.core.SchedulingQueue.assigned_pod_added`). The scheduler ends a
batch itself after a pod whose preemption evicted pods or cleared nominations.

A batch of gangs follows the same folds (the queue hands out each gang's members whole, and
gangs share a batch only with gangs, up to ``max_pods`` and under the same two rules), and
settles each gang (assumed, or every fold undone) before the next
(:mod:`podium.actors.cycle.gang_cycle`). The bind rule above holds for gangs too: a gang that
failed after an earlier gang of its batch was placed is not moved by that gang's binds (the
units of one pop, and their members, remember the batch's first cycle).
"""

from __future__ import annotations

__all__ = ["batch_max_pods"]


def batch_max_pods(max_pods: int, *, nominations: bool, affinity_waiters: bool) -> int:
    """The most pods the next batch may take: ``max_pods``, or one while ``nominations``
    exist or ``affinity_waiters`` wait (see the module docstring)."""
    return 1 if nominations or affinity_waiters else max_pods
