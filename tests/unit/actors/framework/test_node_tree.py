"""The zone-interleaved node tree (node_tree.go@v1.14 and seed 002's example)."""

from __future__ import annotations

import pytest

from podium.actors.framework.node_tree import NodeTree

ZONE = "topology.kubernetes.io/zone"


def _tree(*nodes: tuple[str, str]) -> NodeTree:
    tree = NodeTree()
    for name, zone in nodes:
        tree.add(name, {ZONE: zone} if zone else {})
    return tree


def test_seed_002_example_interleaves_zones() -> None:
    tree = _tree(("n1", "z1"), ("n2", "z1"), ("n3", "z1"), ("n4", "z1"), ("n5", "z2"), ("n6", "z2"))
    assert tree.list() == ["n1", "n5", "n2", "n6", "n3", "n4"]


def test_zones_ordered_by_first_arrival_nodes_by_arrival() -> None:
    tree = _tree(("a", "z2"), ("b", "z1"), ("c", "z2"), ("d", ""), ("e", "z1"))
    assert tree.list() == ["a", "b", "d", "c", "e"]


def test_node_whose_zone_changes_moves_to_end_of_new_zone() -> None:
    tree = _tree(("a", "z1"), ("b", "z1"), ("c", "z2"), ("d", "z2"))
    tree.add("a", {ZONE: "z2"})
    assert tree.list() == ["b", "c", "d", "a"]
    tree.add("a", {ZONE: "z2"})  # unchanged labels: no move
    assert tree.list() == ["b", "c", "d", "a"]


def test_emptied_zone_disappears_and_returns_at_the_end() -> None:
    tree = _tree(("a", "z1"), ("b", "z2"), ("c", "z3"))
    tree.remove("a")
    tree.add("x", {ZONE: "z1"})
    assert tree.list() == ["b", "c", "x"]
    assert len(tree) == 3


def test_remove_unknown_node_is_an_error_naming_it() -> None:
    with pytest.raises(KeyError, match="node ghost is not in the node tree"):
        NodeTree().remove("ghost")


def test_beta_zone_label_and_region_take_part_in_the_key() -> None:
    tree = NodeTree()
    tree.add(
        "a",
        {"failure-domain.beta.kubernetes.io/zone": "z1", "topology.kubernetes.io/zone": "other"},
    )
    tree.add("b", {"topology.kubernetes.io/zone": "z1"})
    tree.add("c", {"topology.kubernetes.io/zone": "z1", "topology.kubernetes.io/region": "r2"})
    tree.add("d", {"failure-domain.beta.kubernetes.io/zone": "z1"})
    # a and b and d share region "" zone "z1"; c is region r2.
    assert tree.list() == ["a", "c", "b", "d"]
