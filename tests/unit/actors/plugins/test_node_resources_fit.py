"""PodFitsResources, scalar and vector forms, on the v1.14 TestPodFitsResources rows.

Rows are ported from pkg/scheduler/algorithm/predicates/predicates_test.go@v1.14.0,
TestPodFitsResources (enoughPodsTests, notEnoughPodsTests, storagePodsTests); the Go test
builds pods from ``schedulernodeinfo.Resource`` values (MilliCPU in millicores, Memory and
EphemeralStorage in bytes, scalars in units), reproduced by :func:`res`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import pytest
from builders import make_node, make_pod
from scalar_plugins import reasons_of

from podium.actors.framework.columns import NodeColumns
from podium.actors.framework.interface import (
    ERR_NODE_NOT_FOUND,
    SKIP,
    Code,
    PluginArgs,
    PredicateError,
    VectorFilterPlugin,
    run_filter,
    run_filter_columns,
)
from podium.actors.framework.nodeinfo import NodeInfo, PodInfo
from podium.actors.framework.snapshot import Snapshot
from podium.actors.plugins import names
from podium.actors.plugins.node_resources_fit import (
    FACTORIES,
    NAME,
    PodFitsResources,
)
from podium.protocol.objects import Pod

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
KIO_A = "kubernetes.io/something"
KIO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"

CPU, MEM, EPH, PODS = (
    "Insufficient cpu",
    "Insufficient memory",
    "Insufficient ephemeral-storage",
    "Insufficient pods",
)


def res(cpu: int = 0, mem: int = 0, eph: int = 0, **scalar: int) -> dict[str, Any]:
    """``schedulernodeinfo.Resource{...}.ResourceList()``: zeros included, as the Go test has them."""
    out: dict[str, Any] = {
        "cpu": f"{cpu}m",
        "memory": str(mem),
        "pods": "0",
        "ephemeral-storage": str(eph),
    }
    out.update({k: str(v) for k, v in scalar.items()})
    return out


def sc(name: str, value: int) -> dict[str, int]:
    """A scalar resource for :func:`res` (names with '/' cannot be keyword arguments)."""
    return {name: value}


def resource_pod(
    *usage: dict[str, Any], init: tuple[dict[str, Any], ...] = (), name: str = "pod"
) -> Pod:
    """newResourcePod / newResourceInitPod."""
    b = make_pod(name)
    for u in usage:
        b.req_map(u)
    for u in init:
        b.init_req(u)
    obj: Pod = b.obj()
    return obj


def alloc(cpu: int, mem: int, pods: int, ext_a: int, storage: int, huge_a: int) -> dict[str, Any]:
    """makeAllocatableResources (makeResources' capacity is the same list)."""
    return {
        "cpu": f"{cpu}m",
        "memory": str(mem),
        "pods": str(pods),
        EXT_A: str(ext_a),
        "ephemeral-storage": str(storage),
        HUGE_A: str(huge_a),
    }


ENOUGH_PODS = alloc(10, 20, 32, 5, 20, 5)
ONE_POD = alloc(10, 20, 1, 0, 0, 0)


@dataclass(frozen=True)
class Case:
    name: str
    pod: Pod
    existing: dict[str, Any]  # the requests of the one pod already on the node
    want: tuple[str, ...] = ()
    allocatable: dict[str, Any] = field(default_factory=lambda: ENOUGH_PODS)
    capacity: dict[str, Any] | None = None  # None: same as allocatable

    def node(self) -> NodeInfo:
        b = make_node("machine").capacity_map(
            self.allocatable if self.capacity is None else self.capacity
        )
        info: NodeInfo = b.allocatable(self.allocatable).info(
            resource_pod(self.existing, name="existing")
        )
        return info


def _r(**kw: Any) -> dict[str, Any]:
    scalars = kw.pop("scalars", {})
    return res(**kw, **scalars)


# predicates_test.go@v1.14.0 TestPodFitsResources, enoughPodsTests (29 of 30 rows; the row
# "skip checking ignored extended resource" needs ignoredExtendedResources, absent in Podium).
ENOUGH_CASES = [
    Case("no resources requested always fits", resource_pod(), _r(cpu=10, mem=20)),
    Case(
        "too many resources fails",
        resource_pod(_r(cpu=1, mem=1)),
        _r(cpu=10, mem=20),
        (CPU, MEM),
    ),
    Case(
        "too many resources fails due to init container cpu",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=3, mem=1),)),
        _r(cpu=8, mem=19),
        (CPU,),
    ),
    Case(
        "too many resources fails due to highest init container cpu",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=3, mem=1), _r(cpu=2, mem=1))),
        _r(cpu=8, mem=19),
        (CPU,),
    ),
    Case(
        "too many resources fails due to init container memory",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=1, mem=3),)),
        _r(cpu=9, mem=19),
        (MEM,),
    ),
    Case(
        "too many resources fails due to highest init container memory",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=1, mem=3), _r(cpu=1, mem=2))),
        _r(cpu=9, mem=19),
        (MEM,),
    ),
    Case(
        "init container fits because it's the max, not sum, of containers and init containers",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=1, mem=1),)),
        _r(cpu=9, mem=19),
    ),
    Case(
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        resource_pod(_r(cpu=1, mem=1), init=(_r(cpu=1, mem=1), _r(cpu=1, mem=1))),
        _r(cpu=9, mem=19),
    ),
    Case("both resources fit", resource_pod(_r(cpu=1, mem=1)), _r(cpu=5, mem=5)),
    Case("one resource memory fits", resource_pod(_r(cpu=2, mem=1)), _r(cpu=9, mem=5), (CPU,)),
    Case("one resource cpu fits", resource_pod(_r(cpu=1, mem=2)), _r(cpu=5, mem=19), (MEM,)),
    Case("equal edge case", resource_pod(_r(cpu=5, mem=1)), _r(cpu=5, mem=19)),
    Case(
        "equal edge case for init container",
        resource_pod(_r(cpu=4, mem=1), init=(_r(cpu=5, mem=1),)),
        _r(cpu=5, mem=19),
    ),
    Case("extended resource fits", resource_pod(_r(scalars=sc(EXT_A, 1))), _r()),
    Case(
        "extended resource fits for init container",
        resource_pod(_r(), init=(_r(scalars=sc(EXT_A, 1)),)),
        _r(),
    ),
    Case(
        "extended resource capacity enforced",
        resource_pod(_r(cpu=1, mem=1, scalars=sc(EXT_A, 10))),
        _r(scalars=sc(EXT_A, 0)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource capacity enforced for init container",
        resource_pod(_r(), init=(_r(cpu=1, mem=1, scalars=sc(EXT_A, 10)),)),
        _r(scalars=sc(EXT_A, 0)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource allocatable enforced",
        resource_pod(_r(cpu=1, mem=1, scalars=sc(EXT_A, 1))),
        _r(scalars=sc(EXT_A, 5)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource allocatable enforced for init container",
        resource_pod(_r(), init=(_r(cpu=1, mem=1, scalars=sc(EXT_A, 1)),)),
        _r(scalars=sc(EXT_A, 5)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource allocatable enforced for multiple containers",
        resource_pod(
            _r(cpu=1, mem=1, scalars=sc(EXT_A, 3)), _r(cpu=1, mem=1, scalars=sc(EXT_A, 3))
        ),
        _r(scalars=sc(EXT_A, 2)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource allocatable admits multiple init containers",
        resource_pod(
            _r(),
            init=(_r(cpu=1, mem=1, scalars=sc(EXT_A, 3)), _r(cpu=1, mem=1, scalars=sc(EXT_A, 3))),
        ),
        _r(scalars=sc(EXT_A, 2)),
    ),
    Case(
        "extended resource allocatable enforced for multiple init containers",
        resource_pod(
            _r(),
            init=(_r(cpu=1, mem=1, scalars=sc(EXT_A, 6)), _r(cpu=1, mem=1, scalars=sc(EXT_A, 3))),
        ),
        _r(scalars=sc(EXT_A, 2)),
        (f"Insufficient {EXT_A}",),
    ),
    Case(
        "extended resource allocatable enforced for unknown resource",
        resource_pod(_r(cpu=1, mem=1, scalars=sc(EXT_B, 1))),
        _r(),
        (f"Insufficient {EXT_B}",),
    ),
    Case(
        "extended resource allocatable enforced for unknown resource for init container",
        resource_pod(_r(), init=(_r(cpu=1, mem=1, scalars=sc(EXT_B, 1)),)),
        _r(),
        (f"Insufficient {EXT_B}",),
    ),
    Case(
        "kubernetes.io resource capacity enforced",
        resource_pod(_r(cpu=1, mem=1, scalars=sc(KIO_A, 10))),
        _r(),
        (f"Insufficient {KIO_A}",),
    ),
    Case(
        "kubernetes.io resource capacity enforced for init container",
        resource_pod(_r(), init=(_r(cpu=1, mem=1, scalars=sc(KIO_B, 10)),)),
        _r(),
        (f"Insufficient {KIO_B}",),
    ),
    Case(
        "hugepages resource capacity enforced",
        resource_pod(_r(cpu=1, mem=1, scalars=sc(HUGE_A, 10))),
        _r(scalars=sc(HUGE_A, 0)),
        (f"Insufficient {HUGE_A}",),
    ),
    Case(
        "hugepages resource capacity enforced for init container",
        resource_pod(_r(), init=(_r(cpu=1, mem=1, scalars=sc(HUGE_A, 10)),)),
        _r(scalars=sc(HUGE_A, 0)),
        (f"Insufficient {HUGE_A}",),
    ),
    Case(
        "hugepages resource allocatable enforced for multiple containers",
        resource_pod(
            _r(cpu=1, mem=1, scalars=sc(HUGE_A, 3)), _r(cpu=1, mem=1, scalars=sc(HUGE_A, 3))
        ),
        _r(scalars=sc(HUGE_A, 2)),
        (f"Insufficient {HUGE_A}",),
    ),
]

# predicates_test.go@v1.14.0 TestPodFitsResources, notEnoughPodsTests (4 of 4 rows).
NOT_ENOUGH_PODS_CASES = [
    Case(
        "even without specified resources predicate fails when there's no space for additional pod",
        resource_pod(),
        _r(cpu=10, mem=20),
        (PODS,),
        ONE_POD,
        {},
    ),
    Case(
        "even if both resources fit predicate fails when there's no space for additional pod",
        resource_pod(_r(cpu=1, mem=1)),
        _r(cpu=5, mem=5),
        (PODS,),
        ONE_POD,
        {},
    ),
    Case(
        "even for equal edge case predicate fails when there's no space for additional pod",
        resource_pod(_r(cpu=5, mem=1)),
        _r(cpu=5, mem=19),
        (PODS,),
        ONE_POD,
        {},
    ),
    Case(
        "even for equal edge case predicate fails when there's no space for additional pod due to init container",
        resource_pod(_r(cpu=5, mem=1), init=(_r(cpu=5, mem=1),)),
        _r(cpu=5, mem=19),
        (PODS,),
        ONE_POD,
        {},
    ),
]

# predicates_test.go@v1.14.0 TestPodFitsResources, storagePodsTests (4 of 4 rows).
STORAGE_CASES = [
    Case(
        "due to container scratch disk", resource_pod(_r(cpu=1, mem=1)), _r(cpu=10, mem=10), (CPU,)
    ),
    Case("pod fit", resource_pod(_r(cpu=1, mem=1)), _r(cpu=2, mem=10)),
    Case(
        "storage ephemeral local storage request exceeds allocatable",
        resource_pod(_r(eph=25)),
        _r(cpu=2, mem=2),
        (EPH,),
    ),
    Case("pod fits", resource_pod(_r(eph=10)), _r(cpu=2, mem=2)),
]


def _overhead_pod(requests: dict[str, Any], overhead: dict[str, Any]) -> Pod:
    obj: Pod = make_pod("pod").req_map(requests).overhead(overhead).obj()
    return obj


def _limits_only_pod(limits: dict[str, Any]) -> Pod:
    obj: Pod = make_pod("pod").container(limits=limits).obj()
    return obj


# Later Kubernetes rows (predicates_test.go@v1.16 TestPodFitsResources) for pod overhead, which
# Podium counts (docs/differences.md), and Podium's own rows.
PODIUM_CASES = [
    Case(
        "resources + pod overhead fits",
        _overhead_pod(_r(cpu=1, mem=1), {"cpu": "3m", "memory": "13"}),
        _r(cpu=5, mem=5),
    ),
    Case(
        "requests + overhead does not fit for memory",
        _overhead_pod(_r(cpu=1, mem=1), {"cpu": "1m", "memory": "15"}),
        _r(cpu=5, mem=5),
        (MEM,),
    ),
    Case(
        "podium: several scalar resources are reported sorted by name",
        resource_pod(_r(cpu=1, mem=1, scalars={HUGE_A: 10, EXT_B: 1, EXT_A: 10})),
        _r(),
        (f"Insufficient {EXT_A}", f"Insufficient {EXT_B}", f"Insufficient {HUGE_A}"),
    ),
    Case(
        "podium: pod count and every resource are reported in order",
        resource_pod(_r(cpu=11, mem=21, eph=1, scalars=sc(EXT_A, 1))),
        _r(),
        (PODS, CPU, MEM, EPH, f"Insufficient {EXT_A}"),
        ONE_POD,
        {},
    ),
    Case(
        "podium: an over-committed node fails a pod that asks only for memory",
        resource_pod(_r(mem=1)),
        _r(cpu=12, mem=1),
        (CPU,),
    ),
    Case(
        "podium: an over-committed node still takes a pod that asks for nothing",
        resource_pod(),
        _r(cpu=12, mem=30),
    ),
    Case(
        "podium: a limit without a request counts as the request",
        _limits_only_pod({"cpu": "11m"}),
        _r(),
        (CPU,),
    ),
    Case(
        "podium: a node without a pods entry has room for no pod",
        resource_pod(),
        _r(),
        (PODS,),
        {"cpu": "10m", "memory": "20"},
    ),
]

CASES = ENOUGH_CASES + NOT_ENOUGH_PODS_CASES + STORAGE_CASES + PODIUM_CASES

PLUGIN = PodFitsResources(PluginArgs(NAME))


def _decoys() -> list[NodeInfo]:
    roomy = make_node("roomy").capacity_map(
        {
            "cpu": "4",
            "memory": "32Gi",
            "pods": "110",
            "ephemeral-storage": "100Gi",
            EXT_A: "100",
            HUGE_A: "100",
        }
    )
    full = make_node("full").capacity_map({"cpu": "1m", "memory": "1", "pods": "0"})
    return [
        roomy.info(),
        full.info(resource_pod(_r(cpu=1, mem=1, scalars=sc(EXT_B, 1)), name="other")),
    ]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_pod_fits_resources(case: Case) -> None:
    pod = PodInfo(case.pod)
    info = case.node()
    infos = [*_decoys(), info]
    meta = PLUGIN.pre_filter(pod, Snapshot(infos))
    assert meta is not SKIP

    status = run_filter(PLUGIN, pod, meta, info)
    assert status.reasons == case.want
    assert status.is_success == (not case.want)
    if case.want:
        assert status.code is Code.UNSCHEDULABLE

    cols = NodeColumns(infos)
    masks = run_filter_columns(PLUGIN, pod, meta, cols)
    assert reasons_of(masks, len(infos) - 1) == case.want
    for row, other in enumerate(infos):
        assert reasons_of(masks, row) == run_filter(PLUGIN, pod, meta, other).reasons, other.name


@pytest.mark.parametrize("cpu", ["1e15", "1e16", "1e17", "1e30"])
def test_absurd_requests_never_fit_in_either_form(cpu: str) -> None:
    # Quantities saturate at INT64_MAX; "allocatable < asked + used" wrapped in int64 and let
    # a 1e16-cpu pod onto a 4-cpu node that already ran a pod.
    busy = make_node("busy").capacity(cpu="4", memory="8Gi", pods=110)
    info = busy.info(make_pod("running").req(cpu="1").obj())
    pod = PodInfo(make_pod("huge").req(cpu=cpu, memory=cpu).obj())
    meta = PLUGIN.pre_filter(pod, Snapshot([info]))
    want = ("Insufficient cpu", "Insufficient memory")
    assert run_filter(PLUGIN, pod, meta, info).reasons == want
    assert reasons_of(run_filter_columns(PLUGIN, pod, meta, NodeColumns([info])), 0) == want


def test_node_without_node_object_is_an_error() -> None:
    pod = PodInfo(resource_pod(_r(cpu=1)))
    ghost = NodeInfo(name="ghost")
    status = run_filter(PLUGIN, pod, None, ghost)
    assert status.code is Code.ERROR
    assert status.reasons == (ERR_NODE_NOT_FOUND,)
    with pytest.raises(PredicateError, match=ERR_NODE_NOT_FOUND):
        run_filter_columns(PLUGIN, pod, None, NodeColumns([ghost]))


def test_plugin_contract() -> None:
    plugin = FACTORIES[names.POD_FITS_RESOURCES](PluginArgs("ResourceSufficiency"))
    assert plugin.name == "ResourceSufficiency"
    assert isinstance(plugin, VectorFilterPlugin)
    assert set(FACTORIES) == {names.POD_FITS_RESOURCES}
