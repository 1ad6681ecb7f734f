"""StoreCore.bind with pod groups (issue 24): a group's bindings are one transaction, all bound
or none, each member's failure naming the one refused; lone bindings beside them as ever."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import pytest
from builders import make_node, make_pod

from podium.protocol import objects as o
from podium.protocol.wire import ObjectRef
from podium.store.core import StoreCore, bind_units
from podium.store.mail import Binding

T0 = 1795341600.0


def _core() -> StoreCore:
    uids = (f"uid-{i}" for i in itertools.count(1))
    return StoreCore(wall_clock=lambda: T0, new_uid=lambda: next(uids))


def _pv(name: str, claim_ref: dict[str, str] | None = None) -> o.PersistentVolume:
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}}
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    data = {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    return msgspec.convert(data, o.PersistentVolume, dec_hook=o.dec_hook)


def _pvc(name: str, namespace: str = "ml") -> o.PersistentVolumeClaim:
    data = {"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace}}
    return msgspec.convert(data, o.PersistentVolumeClaim, dec_hook=o.dec_hook)


def _cluster(core: StoreCore) -> None:
    """Nodes n1, n2; volumes pv0..pv3 with claims ml/c0..c3; a gang ml/w0..w3 (wN claims cN),
    a second one ml/b0, ml/b1, and lone pods default/solo1, default/solo2."""
    core.write(
        [
            make_node("n1").obj(),
            make_node("n2").obj(),
            *(_pv(f"pv{i}") for i in range(4)),
            *(_pvc(f"c{i}") for i in range(4)),
            *(make_pod(f"w{i}").ns("ml").pvc(f"c{i}").obj() for i in range(4)),
            make_pod("b0").ns("ml").obj(),
            make_pod("b1").ns("ml").obj(),
            make_pod("solo1").obj(),
            make_pod("solo2").obj(),
        ]
    )


@dataclass(frozen=True)
class M:
    """A binding to make against the cluster: the pod's stored uid unless ``uid`` is given."""

    name: str
    group: str = "ml/train"
    node: str = "n1"
    volumes: dict[str, str] = field(default_factory=dict)
    uid: str = ""

    def binding(self, core: StoreCore) -> Binding:
        namespace = "default" if self.name.startswith("solo") else "ml"
        pod = core.get("Pod", namespace, self.name)
        uid = self.uid or (pod.metadata.uid if pod is not None else "uid-gone")
        return Binding(
            namespace=namespace,
            name=self.name,
            uid=uid,
            node=self.node,
            volumes=self.volumes,
            group=self.group,
        )


def _w(i: int, **kw: Any) -> M:
    """Gang member ml/wI of ml/train with its claim cI on pvI."""
    return M(f"w{i}", volumes={f"ml/c{i}": f"pv{i}"}, **kw)


def _delete(kind: str, name: str, namespace: str = "ml") -> Callable[[StoreCore], object]:
    return lambda core: core.write([], [ObjectRef(kind=kind, namespace=namespace, name=name)])


def _because(who: str, message: str, group: str = "ml/train") -> str:
    return f"pod group {group}: not bound, because ml/{who} could not be: {message}"


GONE = "pod ml/w2 not found; cannot bind it to node n1"
RECREATED = (
    "pod ml/w1 has uid uid-12, not uid-x (deleted and re-created); cannot bind it to node n1"
)
BOUND = "pod ml/b0 is already bound to node n2; cannot bind it to node n1"
NO_NODE = "node n9 not found; cannot bind pod ml/w1 to it"
TAKEN = "PersistentVolume pv2 is already claimed by other/c, not ml/c2; cannot bind pod ml/w2 to node n1"
TWICE = (
    "PersistentVolume pv0 is already claimed by ml/c0, not ml/c1; cannot bind pod ml/w1 to node n1"
)


@dataclass(frozen=True)
class GroupCase:
    name: str
    bindings: list[M]
    bound: list[str]
    """The pods bound, in the order of their Bound changes."""
    failed: list[tuple[str, str, str]] = field(default_factory=list)
    """(pod, code, message) per refused binding, in the order reported."""
    setup: Callable[[StoreCore], object] | None = None


GROUP_CASES = [
    GroupCase("all fine", [_w(i) for i in range(4)], ["w0", "w1", "w2", "w3"]),
    GroupCase(
        "one member deleted",
        [_w(i) for i in range(4)],
        [],
        [
            ("w0", "not_found", _because("w2", GONE)),
            ("w1", "not_found", _because("w2", GONE)),
            ("w2", "not_found", GONE),
            ("w3", "not_found", _because("w2", GONE)),
        ],
        setup=_delete("Pod", "w2"),
    ),
    GroupCase(
        "one member re-created with another uid",
        [_w(0), _w(1, uid="uid-x")],
        [],
        [
            ("w0", "conflict", _because("w1", RECREATED)),
            ("w1", "conflict", RECREATED),
        ],
    ),
    GroupCase(
        "one member already bound",
        [_w(0), M("b0")],
        [],
        [
            ("w0", "conflict", _because("b0", BOUND)),
            ("b0", "conflict", BOUND),
        ],
        setup=lambda core: core.bind([M("b0", group="", node="n2").binding(core)]),
    ),
    GroupCase(
        "one member's node gone",
        [_w(0), _w(1, node="n9")],
        [],
        [
            ("w0", "not_found", _because("w1", NO_NODE)),
            ("w1", "not_found", NO_NODE),
        ],
    ),
    GroupCase(
        "a claim's volume taken by another claim",
        [_w(0), _w(1), _w(2)],
        [],
        [
            ("w0", "conflict", _because("w2", TAKEN)),
            ("w1", "conflict", _because("w2", TAKEN)),
            ("w2", "conflict", TAKEN),
        ],
        setup=lambda core: core.write([_pv("pv2", {"namespace": "other", "name": "c"})]),
    ),
    GroupCase(
        "two members after one volume: the second sees the first's staged claim",
        [_w(0), M("w1", volumes={"ml/c1": "pv0"})],
        [],
        [
            ("w0", "conflict", _because("w1", TWICE)),
            ("w1", "conflict", TWICE),
        ],
    ),
    GroupCase(
        "the first member refused: the others never tried, all named",
        [_w(2), _w(0), _w(1)],
        [],
        [
            ("w2", "not_found", GONE),
            ("w0", "not_found", _because("w2", GONE)),
            ("w1", "not_found", _because("w2", GONE)),
        ],
        setup=_delete("Pod", "w2"),
    ),
    GroupCase(
        "a group of one refused: its own message only",
        [_w(2)],
        [],
        [("w2", "not_found", GONE)],
        setup=_delete("Pod", "w2"),
    ),
    GroupCase(
        "two groups in one batch, one failing",
        [_w(0), _w(1), M("b0", group="ml/eval"), M("b1", group="ml/eval", node="n9")],
        ["w0", "w1"],
        [
            (
                "b0",
                "not_found",
                _because("b1", "node n9 not found; cannot bind pod ml/b1 to it", "ml/eval"),
            ),
            ("b1", "not_found", "node n9 not found; cannot bind pod ml/b1 to it"),
        ],
    ),
    GroupCase(
        "lone bindings beside a failing group still commit",
        [M("solo1", group=""), _w(0), _w(2), M("solo2", group="")],
        ["solo1", "solo2"],
        [("w0", "not_found", _because("w2", GONE)), ("w2", "not_found", GONE)],
        setup=_delete("Pod", "w2"),
    ),
    GroupCase(
        "a lone binding refused beside a group that commits",
        [_w(0), M("solo1", group="", uid="uid-x"), _w(1)],
        ["w0", "w1"],
        [
            (
                "solo1",
                "conflict",
                "pod default/solo1 has uid uid-17, not uid-x (deleted and re-created); "
                "cannot bind it to node n1",
            )
        ],
    ),
    GroupCase(
        "interleaved: each group where its first member stands, members in their order",
        [
            _w(1),
            M("solo1", group=""),
            M("b1", group="ml/eval"),
            _w(0),
            M("b0", group="ml/eval"),
            M("solo2", group=""),
        ],
        ["w1", "w0", "solo1", "b1", "b0", "solo2"],
    ),
]


@pytest.mark.parametrize("case", GROUP_CASES, ids=attrgetter("name"))
def test_bind_groups(case: GroupCase) -> None:
    core = _core()
    _cluster(core)
    if case.setup is not None:
        case.setup(core)
    before = core.revision
    bindings = [m.binding(core) for m in case.bindings]
    untouched = {  # what every refused group's objects are before the bind
        (type(obj).__name__, obj.metadata.namespace, obj.metadata.name): obj
        for obj in core.all_objects()
    }
    revision, changes, failed = core.bind(bindings)
    assert [c.name for c in changes if c.type == "Bound"] == case.bound
    assert [(f.binding.name, f.code, f.message) for f in failed] == case.failed
    assert {f.binding.name for f in failed}.isdisjoint(case.bound)
    # Revisions follow on from the batch's start, one per change, none lost to a refused group.
    assert [c.revision for c in changes] == list(range(before + 1, revision + 1))
    assert core.revision == revision
    # Every binding is either bound or failed, and the failures are the very bindings given.
    assert sorted([*case.bound, *(f.binding.name for f in failed)]) == sorted(
        m.name for m in case.bindings
    )
    assert all(any(f.binding is b for b in bindings) for f in failed)
    # A refused group leaves nothing of itself: its pods, claims and volumes as they were.
    changed = {(c.kind, c.namespace, c.name) for c in changes}
    for slot, obj in untouched.items():
        if slot not in changed:
            assert core.get(*slot) == obj, slot
    for name in case.bound:
        pod = core.get("Pod", "default" if name.startswith("solo") else "ml", name)
        assert isinstance(pod, o.Pod) and pod.spec.node_name


def test_a_group_commits_volumes_then_pod_member_by_member() -> None:
    """The changes of a group in order: each member's volume, its claim, then the pod."""
    core = _core()
    _cluster(core)
    before = core.revision
    _, changes, failed = core.bind([_w(0).binding(core), _w(1).binding(core)])
    assert failed == []
    assert [(c.revision - before, c.type, c.kind, c.name) for c in changes] == [
        (1, "Modified", "PersistentVolume", "pv0"),
        (2, "Modified", "PersistentVolumeClaim", "c0"),
        (3, "Bound", "Pod", "w0"),
        (4, "Modified", "PersistentVolume", "pv1"),
        (5, "Modified", "PersistentVolumeClaim", "c1"),
        (6, "Bound", "Pod", "w1"),
    ]


def test_lone_bindings_are_bound_as_before() -> None:
    """A batch without groups: exactly what the same bindings gave before groups existed
    (each alone; a refused one does not stop the next)."""
    core = _core()
    _cluster(core)
    lone = [
        M("solo1", group="").binding(core),
        M("w0", group="", node="n9").binding(core),
        M("solo2", group="").binding(core),
    ]
    _, changes, failed = core.bind(lone)
    assert [c.name for c in changes] == ["solo1", "solo2"]
    assert [(f.binding, f.code) for f in failed] == [(lone[1], "not_found")]


def test_bind_units() -> None:
    def b(name: str, group: str = "") -> Binding:
        return Binding(namespace="ml", name=name, uid=name, node="n1", group=group)

    batch = [b("a", "g"), b("x"), b("c", "h"), b("b", "g"), b("y"), b("d", "h")]
    assert [[x.name for x in unit] for unit in bind_units(batch)] == [
        ["a", "b"],
        ["x"],
        ["c", "d"],
        ["y"],
    ]
    assert bind_units([]) == []
