"""``podium db backup etcd://...``: an etcd store copied into a new SQLite database.

An offline tool beside :mod:`podium.store.tools` (check, backup, recover of a SQLite file):
the copy is what :meth:`~podium.store.etcd.durability.EtcdDurability.snapshot` reads at one
etcd revision, written by :func:`~podium.store.tools.write_database`, so ``podium db check``
runs every invariant on it and ``podium serve --db DEST`` serves it.
"""

from __future__ import annotations

from functools import partial

import trio

from podium.protocol.objects import Pod
from podium.store.etcd.durability import EtcdDurability, Snapshot
from podium.store.schema import encode_object, event_row
from podium.store.tools import write_database

__all__ = ["export_prefix"]


async def export_prefix(durability: EtcdDurability, dest: str, *, force: bool = False) -> Snapshot:
    """Write what the etcd prefix holds into a new Podium SQLite database at ``dest`` (``podium
    db backup etcd://...``): every object, the event log kept, and a bindings row for each bound
    pod (etcd keeps no bindings table: a binding is the pod's ``spec.nodeName``). The copy is
    one etcd revision's state; ``podium db check`` runs every invariant on it, and ``podium
    serve --db DEST`` serves it.

    Raises:
        DatabaseDamaged: the prefix fails the checks at start.
        StoreError: etcd is unavailable, the prefix holds no store, ``dest`` exists (without
            ``force``), or writing it failed.
    """
    snapshot = await durability.snapshot()
    objects = []
    bindings = []
    for obj in snapshot.objects:
        meta = obj.metadata
        revision = int(meta.resource_version) if meta.resource_version.isdigit() else 0
        objects.append(
            (
                type(obj).__name__,
                meta.namespace,
                meta.name,
                min(revision, snapshot.revision),
                encode_object(obj),
            )
        )
        if isinstance(obj, Pod) and obj.spec.node_name:
            bindings.append((meta.uid, meta.namespace, meta.name, obj.spec.node_name, revision))
    events = [event_row(change) for change in snapshot.events]
    await trio.to_thread.run_sync(
        partial(write_database, dest, snapshot.revision, objects, events, bindings, force=force)
    )
    return snapshot
