"""The zone-interleaved node tree (pkg/scheduler/internal/cache/node_tree.go).

Nodes are grouped by zone key (region + ":\\x00:" + zone, see :mod:`zones`). Zones are ordered by
the arrival of their first node, nodes within a zone by arrival; a node whose zone changes moves
to the end of its new zone; a zone left empty disappears (and comes back at the end).
:meth:`NodeTree.list` interleaves the zones round-robin (seed 002)::

    zone 1: n1 n2 n3 n4        ->  n1 n5 n2 n6 n3 n4
    zone 2: n5 n6

The scheduler walks that list from a start index carried from pod to pod.
"""

from __future__ import annotations

from collections.abc import Mapping

from podium.actors.framework.zones import zone_key

__all__ = ["NodeTree"]


class NodeTree:
    """Node names grouped by zone, in arrival order."""

    def __init__(self) -> None:
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._list: list[str] | None = None

    def __len__(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add(self, name: str, labels: Mapping[str, str]) -> None:
        """Add a node, or move it when its zone changed (a no-op when nothing changed)."""
        zone = zone_key(labels)
        old = self._zone_of.get(name)
        if old == zone:
            return
        if old is not None:
            self._remove_from_zone(name, old)
        self._zones.setdefault(zone, []).append(name)
        self._zone_of[name] = zone
        self._list = None

    def remove(self, name: str) -> None:
        """Remove a node; raises KeyError naming it when it is not in the tree."""
        zone = self._zone_of.pop(name, None)
        if zone is None:
            raise KeyError(f"node {name} is not in the node tree")
        self._remove_from_zone(name, zone)
        self._list = None

    def _remove_from_zone(self, name: str, zone: str) -> None:
        members = self._zones[zone]
        members.remove(name)
        if not members:
            del self._zones[zone]

    def list(self) -> list[str]:
        """All node names, zones interleaved round-robin."""
        if self._list is None:
            out: list[str] = []
            zones = list(self._zones.values())
            depth = max((len(z) for z in zones), default=0)
            for i in range(depth):
                out.extend(z[i] for z in zones if i < len(z))
            self._list = out
        return list(self._list)
