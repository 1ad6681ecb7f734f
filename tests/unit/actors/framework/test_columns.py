"""Node columns kept in step row by row equal columns built afresh from the same NodeInfos."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import pytest
from builders import make_node, make_pod

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.nodeinfo import NodeInfo
from podium.actors.framework.snapshot import Snapshot
from podium.protocol import objects as o


def _node(name: str) -> o.Node:
    b = make_node(name).capacity(cpu="4", memory="8Gi", pods=10)
    result: o.Node = b.taint("dedicated", "x").condition("MemoryPressure", "True").obj()
    return result


def _snapshot() -> Snapshot:
    infos = []
    for name in ("n1", "n2"):
        info = NodeInfo(name=name)
        info.set_node(_node(name))
        info.add_pod(make_pod(f"{name}-a").node(name).req(cpu="1").info())
        infos.append(info)
    snapshot = Snapshot(infos)
    assert snapshot.columns.n == 2  # built before the change, as the scheduler's is
    return snapshot


def _add_pod_with_port(info: NodeInfo) -> None:
    info.add_pod(make_pod("b").node(info.name).req(cpu="500m", memory="1Gi").host_port(80).info())


def _remove_pod(info: NodeInfo) -> None:
    info.remove_pod(info.pods[0])


def _replace_node(info: NodeInfo) -> None:
    info.set_node(make_node(info.name).capacity(cpu="8", pods=20).obj())


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[NodeInfo], None]


CASES = [
    Case("a pod added (same Node object: the pods' columns only)", _add_pod_with_port),
    Case("a pod removed", _remove_pod),
    Case("the Node object replaced (every column)", _replace_node),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_a_changed_row_equals_a_fresh_build(case: Case) -> None:
    snapshot = _snapshot()
    changed = snapshot.by_name["n2"].clone()
    case.change(changed)
    snapshot.replace_node_info(changed)
    kept, fresh = snapshot.columns, NodeColumns(snapshot.node_infos)
    arrays = [k for k, v in vars(fresh).items() if isinstance(v, np.ndarray) and k != "row_version"]
    assert len(arrays) > 15
    for name in arrays:
        assert getattr(kept, name).tolist() == getattr(fresh, name).tolist(), name
    assert [kept.taint_sets[t] for t in kept.taint_set] == [
        fresh.taint_sets[t] for t in fresh.taint_set
    ]
