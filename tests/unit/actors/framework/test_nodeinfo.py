"""PodInfo/NodeInfo aggregates: how Kubernetes counts a pod's requests."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import pytest
from builders import make_node, make_pod

from podium.actors.framework.nodeinfo import DEFAULT_MEMORY_REQUEST, PodInfo


@dataclass(frozen=True)
class Case:
    name: str
    pod: PodInfo
    milli_cpu: int
    memory: int
    nz_cpu: int
    nz_mem: int
    scalar: dict[str, int]


MI = 1024 * 1024
CASES = [
    Case("no containers requests nothing", make_pod().info(), 0, 0, 0, 0, {}),
    Case(
        "container without requests gets non-zero defaults",
        make_pod().container().info(),
        0,
        0,
        100,
        DEFAULT_MEMORY_REQUEST,
        {},
    ),
    Case(
        "containers add up",
        make_pod().req(cpu="100m", memory="1Mi").req(cpu="1", memory="2Mi").info(),
        1100,
        3 * MI,
        1100,
        3 * MI,
        {},
    ),
    Case(
        "an init container larger than the sum wins per resource",
        make_pod().req(cpu="1", memory="1Mi").init_req({"cpu": "2", "memory": "512Ki"}).info(),
        2000,
        MI,
        2000,
        MI,
        {},
    ),
    Case(
        "overhead is added on top",
        make_pod().req(cpu="1", memory="1Mi").overhead({"cpu": "250m", "memory": "1Mi"}).info(),
        1250,
        2 * MI,
        1250,
        2 * MI,
        {},
    ),
    Case(
        "requests default to limits",
        make_pod().container(limits={"cpu": "500m", "memory": "1Mi"}).info(),
        500,
        MI,
        500,
        MI,
        {},
    ),
    Case(
        "an explicit request beats the limit",
        make_pod().container(requests={"cpu": "200m"}, limits={"cpu": "500m"}).info(),
        200,
        0,
        200,
        DEFAULT_MEMORY_REQUEST,
        {},
    ),
    Case(
        "extended resources count, unknown unprefixed names do not",
        make_pod().req_map({"nvidia.com/gpu": "2", "foo": "3", "hugepages-2Mi": "4Mi"}).info(),
        0,
        0,
        100,
        DEFAULT_MEMORY_REQUEST,
        {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * MI},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_pod_requests(case: Case) -> None:
    r = case.pod.request
    assert (r.milli_cpu, r.memory, r.scalar) == (case.milli_cpu, case.memory, case.scalar)
    assert (case.pod.non_zero_milli_cpu, case.pod.non_zero_memory) == (case.nz_cpu, case.nz_mem)


def test_node_aggregates_follow_add_and_remove() -> None:
    p1 = make_pod("a").req(cpu="1", memory="1Mi").host_port(80).info()
    p2 = make_pod("b").req(cpu="500m").info()
    node = make_node("n").capacity(cpu="4", memory="8Gi", pods=110).info(p1, p2)
    assert node.allocatable.milli_cpu == 4000 and node.allocatable.allowed_pod_number == 110
    assert node.requested.milli_cpu == 1500
    assert len(node.used_ports) == 1
    node.remove_pod(p1)
    assert node.requested.milli_cpu == 500 and not node.used_ports
    assert [p.key for p in node.pods] == ["default/b"]
    with pytest.raises(KeyError, match="pod default/a is not on node n"):
        node.remove_pod(p1)


def test_allocatable_defaults_to_capacity_and_prefers_allocatable() -> None:
    assert make_node().capacity(cpu="2").info().allocatable.milli_cpu == 2000
    both = make_node().capacity(cpu="2").allocatable({"cpu": "1500m"}).info()
    assert both.allocatable.milli_cpu == 1500


def _aggregates(info: PodInfo) -> tuple[object, ...]:
    r = info.request
    return (
        info.key,
        info.namespace,
        info.name,
        info.labels,
        (r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number, r.scalar),
        info.non_zero_milli_cpu,
        info.non_zero_memory,
        info.host_ports,
        info.priority,
    )


@pytest.mark.parametrize(
    ("label", "cpu", "reused"),
    [
        pytest.param("b", "1", True, id="another revision, same spec: the aggregates reused"),
        pytest.param("a", "2", False, id="a changed spec is counted afresh"),
    ],
)
def test_with_pod_equals_a_fresh_pod_info(label: str, cpu: str, reused: bool) -> None:
    old = make_pod("p").label("app", "a").req(cpu="1", memory="1Mi").host_port(80).info()
    new_pod = make_pod("p").label("app", label).req(cpu=cpu, memory="1Mi").host_port(80).obj()
    got = old.with_pod(new_pod)
    assert got.pod is new_pod
    assert _aggregates(got) == _aggregates(PodInfo(new_pod))
    assert (got.request is old.request) is reused


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(make_pod("p").req(cpu="1", memory="1Mi").host_port(80), id="ports"),
        pytest.param(
            make_pod("p").ns("ml").label("app", "a").init_req({"cpu": "3"}).priority(7),
            id="init containers, priority",
        ),
        pytest.param(
            make_pod("p").overhead({"cpu": "250m"}).group("train").req(memory="2Gi"),
            id="overhead, a group",
        ),
    ],
)
def test_on_node_equals_a_fresh_pod_info_of_the_assumed_pod(pod: Any) -> None:
    info = pod.info()
    info.encoded_spec()
    got = info.on_node("n7")
    assert got.pod.spec.node_name == "n7"
    assert got.pod == msgspec.structs.replace(
        info.pod, spec=msgspec.structs.replace(info.pod.spec, node_name="n7")
    )
    fresh = PodInfo(got.pod)
    assert _aggregates(got) == _aggregates(fresh)
    assert got.names_a_group == fresh.names_a_group
    assert got.stamp not in (info.stamp, fresh.stamp)
    # The spec changed: its encoding is made again, not the unassumed pod's.
    assert got.encoded_spec() == fresh.encoded_spec() != info.encoded_spec()
