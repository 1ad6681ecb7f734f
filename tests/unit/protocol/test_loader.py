"""protocol/loader.py: kubectl-shaped files in, Kubernetes-shaped structs out, every error named."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

import msgspec
import pytest
import yaml
from repo_paths import FIXTURES

from podium.protocol import objects as o
from podium.protocol.errors import InvalidObject, LoadError, LoadErrors
from podium.protocol.loader import (
    decode_object,
    load_all,
    load_file,
    load_files,
    load_text,
    parse_documents,
    read_document,
)

KUBECTL_JSON = FIXTURES / "kubectl-get-nodes-pods.json"
KUBECTL_YAML = FIXTURES / "kubectl-get-multi.yaml"
CLIENT_GO = FIXTURES / "real-shaped" / "client-go"
# The shared real files (issue 26), beside the checkout or a worktree's parent: not copied here.
TURN3 = next(
    (
        p / "shared" / "real-clusters" / "turn3"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "real-clusters" / "turn3").is_dir()
    ),
    Path("/nonexistent"),
)
TURN3_INSIGHTS = TURN3 / "insights"
MISSING_KIND = "missing kind: add `kind:` and `apiVersion:` (e.g. `kind: Pod` and `apiVersion: v1`)"
GRAMMAR = (
    "does not match the Kubernetes quantity grammar (e.g. '100m', '1.5', '1Gi', '2e3', '500M')"
)


# --------------------------------------------------------------------------- fixtures


def test_kubectl_json_list_loads_whole() -> None:
    loaded = load_file(KUBECTL_JSON)
    assert [(type(x).__name__, x.metadata.namespace, x.metadata.name) for x in loaded] == [
        ("Node", "", "worker-a1"),
        ("Node", "", "worker-b1"),
        ("Pod", "shop", "web-7d4b9c8f6d-x2k9p"),
        ("Pod", "ml", "train-0"),
        ("Pod", "kube-system", "coredns-5d78c9869d-abcde"),
    ]
    node, unschedulable, web, train, coredns = loaded
    assert isinstance(node, o.Node)
    assert node.status.allocatable["cpu"].milli_value() == 3920
    assert node.status.allocatable["memory"].int_value() == 32626420 * 1024
    assert node.status.allocatable["nvidia.com/gpu"].int_value() == 1
    assert node.status.allocatable["ephemeral-storage"].int_value() == 95500736762
    assert node.spec.taints == [o.Taint(key="dedicated", value="batch", effect="NoSchedule")]
    assert [(c.type, c.status) for c in node.status.conditions] == [
        ("MemoryPressure", "False"),
        ("Ready", "True"),
    ]
    assert node.status.images[0].size_bytes == 28101350
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "eu-west-1a"
    assert node.metadata.creation_timestamp == "2024-05-01T10:00:00Z"
    assert isinstance(unschedulable, o.Node)
    assert unschedulable.spec.unschedulable
    assert isinstance(web, o.Pod)
    assert web.spec.node_name == "worker-a1"
    assert web.spec.containers[0].resources.requests["cpu"].milli_value() == 250
    assert web.spec.containers[0].ports[0].host_port == 8080
    assert web.spec.init_containers[0].resources.requests["cpu"].milli_value() == 1000
    assert [t.toleration_seconds for t in web.spec.tolerations] == [300, 300]
    assert web.metadata.owner_references[0].kind == "ReplicaSet"
    assert web.metadata.owner_references[0].controller is True
    assert web.status.phase == "Running"
    assert isinstance(train, o.Pod)
    assert train.spec.containers[0].resources.requests["nvidia.com/gpu"].int_value() == 1
    affinity = train.spec.affinity
    assert affinity is not None
    assert affinity.node_affinity is not None
    assert isinstance(coredns, o.Pod)
    assert coredns.spec.priority == 2000000000
    assert coredns.spec.priority_class_name == "system-cluster-critical"


def test_kubectl_yaml_multi_document_loads_whole() -> None:
    loaded = load_file(KUBECTL_YAML)
    assert [(type(x).__name__, x.metadata.namespace, x.metadata.name) for x in loaded] == [
        ("Node", "", "worker-c1"),
        ("Pod", "default", "batch-1"),
        ("Service", "jobs", "batch"),
        ("PersistentVolumeClaim", "jobs", "data"),
        ("StorageClass", "", "local-wffc"),
        ("PriorityClass", "", "high"),
    ]
    node, pod, service, claim, storage_class, priority_class = loaded
    assert isinstance(node, o.Node)
    assert node.status.allocatable["cpu"].milli_value() == 3920
    assert isinstance(pod, o.Pod)
    # An unquoted YAML timestamp stays the string it was written as.
    assert pod.metadata.creation_timestamp == "2024-05-02T07:30:00Z"
    requests = pod.spec.containers[0].resources.requests
    assert requests["cpu"].milli_value() == 1500  # a YAML float
    assert requests["memory"].int_value() == 2_000_000_000  # `2e9`: a string to YAML 1.1
    assert requests["ephemeral-storage"].int_value() == 1 << 30
    assert pod.spec.overhead["cpu"].milli_value() == 250
    assert isinstance(service, o.Service)
    assert service.spec.selector == {"app": "batch"}
    assert isinstance(claim, o.PersistentVolumeClaim)
    assert claim.spec.storage_class_name == "local-wffc"
    assert isinstance(storage_class, o.StorageClass)
    assert storage_class.volume_binding_mode == "WaitForFirstConsumer"
    assert isinstance(priority_class, o.PriorityClass)
    assert priority_class.value == 1000


def test_json_and_yaml_of_one_cluster_load_equal() -> None:
    data = json.loads(KUBECTL_JSON.read_text())
    as_yaml = yaml.safe_dump(data, sort_keys=False)
    assert load_text(as_yaml, source="cluster.yaml") == load_file(KUBECTL_JSON)


# --------------------------------------------------------------------------- shapes


_REQUIRED = {"PodGroup": "\nspec: {schedulingPolicy: {basic: {}}}"}
"""What a kind cannot be without (a Kubernetes PodGroup names its policy)."""


@dataclass(frozen=True)
class Shape:
    name: str
    text: str
    want: list[tuple[str, str, str]]  # (kind, namespace, name)
    source: str = "<text>"


POD_JSON = '{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}'

SHAPES = [
    Shape("one JSON object", POD_JSON, [("Pod", "default", "p")]),
    Shape(
        "one YAML object",
        "kind: Pod\nmetadata:\n  name: p\n  namespace: ns\n",
        [("Pod", "ns", "p")],
    ),
    Shape(
        "kind List",
        '{"kind": "List", "apiVersion": "v1", "items": ['
        + POD_JSON
        + ', {"kind": "Node", "metadata": {"name": "n"}}]}',
        [("Pod", "default", "p"), ("Node", "", "n")],
    ),
    Shape(
        "typed list from the API: items without kind",
        '{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "a", "namespace": "x"}}]}',
        [("Pod", "x", "a")],
    ),
    Shape("List with null items", "kind: List\nitems: null\n", []),
    Shape("List with no items", '{"kind": "List", "items": []}', []),
    Shape(
        "multi-document YAML with empty documents",
        "---\nkind: Pod\nmetadata: {name: a}\n---\n---\nkind: List\nitems:\n- kind: Node\n  metadata: {name: n}\n...\n",
        [("Pod", "default", "a"), ("Node", "", "n")],
    ),
    Shape("empty text", "", []),
    Shape("only a comment", "# nothing here\n", []),
    Shape("UTF-8 byte-order mark", "\ufeff" + POD_JSON, [("Pod", "default", "p")]),
    Shape("JSON named .yaml still parses", POD_JSON, [("Pod", "default", "p")], source="x.yaml"),
    Shape(
        "cluster-scoped kind: namespace cleared",
        "kind: Node\nmetadata: {name: n, namespace: stray}\n",
        [("Node", "", "n")],
    ),
    Shape(
        "unknown fields ignored",
        "kind: Pod\nmetadata: {name: p, finalizers: [x]}\nspec: {hostname: h, containers: [{name: c, stdin: true}]}\nextra: 1\n",
        [("Pod", "default", "p")],
    ),
    Shape(
        "every kind",
        "\n---\n".join(
            f"kind: {kind}\nmetadata: {{name: x}}" + _REQUIRED.get(kind, "")
            for kind in sorted(o.KINDS)
        ),
        [(kind, "default" if kind in o.NAMESPACED_KINDS else "", "x") for kind in sorted(o.KINDS)],
    ),
]


@pytest.mark.parametrize("case", SHAPES, ids=attrgetter("name"))
def test_shapes(case: Shape) -> None:
    loaded = load_text(case.text, source=case.source)
    assert [(type(x).__name__, x.metadata.namespace, x.metadata.name) for x in loaded] == case.want
    # bytes in, same objects out
    assert load_text(case.text.encode(), source=case.source) == loaded


def test_parse_documents_gives_raw_objects_in_order() -> None:
    raws = parse_documents("kind: List\nitems: [{kind: Pod}, 3]\n---\nkind: Node\n")
    assert raws == [{"kind": "Pod"}, 3, {"kind": "Node"}]


# --------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class Bad:
    name: str
    text: str
    # (index, kind, namespace, name, path, reason) per error, in file order
    want: list[tuple[int | None, str | None, str | None, str | None, str | None, str]]
    source: str = "bad.yaml"


def _pod(spec: str) -> str:
    return f"kind: Pod\nmetadata: {{name: web, namespace: shop}}\nspec: {spec}\n"


BADS = [
    Bad(
        "negative quantity",
        _pod("{containers: [{resources: {requests: {cpu: '-1'}}}]}"),
        [
            (
                0,
                "Pod",
                "shop",
                "web",
                "$.spec.containers[0].resources.requests['cpu']",
                "quantity '-1' is negative",
            )
        ],
    ),
    Bad(
        "unparsable quantity",
        _pod("{containers: [{}, {resources: {limits: {memory: 1GB}}}]}"),
        [
            (
                0,
                "Pod",
                "shop",
                "web",
                "$.spec.containers[1].resources.limits['memory']",
                f"quantity '1GB' {GRAMMAR}",
            )
        ],
    ),
    Bad(
        "negative extended resource, the key named",
        _pod("{containers: [{resources: {requests: {cpu: 1, nvidia.com/gpu: -2}}}]}"),
        [
            (
                0,
                "Pod",
                "shop",
                "web",
                "$.spec.containers[0].resources.requests['nvidia.com/gpu']",
                "quantity '-2' is negative",
            )
        ],
    ),
    Bad(
        "boolean quantity",
        "kind: Node\nmetadata: {name: n1}\nstatus: {capacity: {cpu: true}}\n",
        [
            (
                0,
                "Node",
                None,
                "n1",
                "$.status.capacity['cpu']",
                "Expected a quantity (string or number), got `bool`",
            )
        ],
    ),
    Bad(
        "wrong JSON type",
        "kind: Node\nmetadata: {name: n1}\nspec: {unschedulable: 'yes'}\n",
        [(0, "Node", None, "n1", "$.spec.unschedulable", "Expected `bool`, got `str`")],
    ),
    Bad(
        "wrong type deep in a list",
        _pod("{tolerations: [{key: a}, {key: b, tolerationSeconds: soon}]}"),
        [
            (
                0,
                "Pod",
                "shop",
                "web",
                "$.spec.tolerations[1].tolerationSeconds",
                "Expected `int | null`, got `str`",
            )
        ],
    ),
    Bad(
        "label value not a string",
        "kind: Pod\nmetadata: {name: web, labels: {app: web, version: 2}}\n",
        [(0, "Pod", "default", "web", "$.metadata.labels['version']", "Expected `str`, got `int`")],
    ),
    Bad(
        "label key not a string",
        "kind: Pod\nmetadata: {name: web, labels: {1: a}}\n",
        [(0, "Pod", "default", "web", "$.metadata.labels[1]", "Expected `str`, got `int` (a key)")],
    ),
    Bad(
        "missing metadata.name",
        "kind: Pod\nmetadata: {namespace: shop}\n",
        [(0, "Pod", "shop", None, "$.metadata.name", "name or generateName is required")],
    ),
    Bad(
        "empty metadata.name",
        "kind: Pod\nmetadata: {name: ''}\n",
        [(0, "Pod", "default", None, "$.metadata.name", "name or generateName is required")],
    ),
    Bad(
        "missing metadata",
        "kind: Service\nspec: {}\n",
        [(0, "Service", "default", None, "$.metadata", "missing required field")],
    ),
    Bad(
        "unknown kind",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n",
        [
            (
                0,
                "Deployment",
                "shop",
                "web",
                "$.kind",
                "unknown kind 'Deployment'; Podium knows Node, PersistentVolume, PersistentVolumeClaim, "
                "Pod, PodDisruptionBudget, PriorityClass, ReplicaSet, ReplicationController, Service, "
                "StatefulSet, StorageClass",
            )
        ],
    ),
    Bad(
        "missing kind",
        "metadata: {name: web}\n",
        [(0, None, None, "web", "$.kind", MISSING_KIND)],
    ),
    Bad(
        "kind not a string",
        "kind: 3\nmetadata: {name: web}\n",
        [(0, None, None, "web", "$.kind", "Expected `str`, got `int`")],
    ),
    Bad(
        "document not a mapping",
        "- kind: Pod\n",
        [(0, None, None, None, "$", "expected a Kubernetes object (a mapping), got `array`")],
    ),
    Bad(
        "List items not a list",
        "kind: List\nitems: {kind: Pod}\n",
        [(None, "List", None, None, "$.items", "Expected `array`, got `object`")],
    ),
    Bad(
        "enum value",
        "kind: StorageClass\nmetadata: {name: s}\nvolumeBindingMode: Later\n",
        [(0, "StorageClass", None, "s", "$.volumeBindingMode", "Invalid enum value 'Later'")],
    ),
    Bad(
        "not YAML",
        "kind: Pod\nmetadata: {name: [\n",
        [
            (
                None,
                None,
                None,
                None,
                None,
                "not valid YAML: while parsing a flow node, did not find expected node content (line 3, column 1)",
            )
        ],
    ),
    Bad(
        "not JSON",
        '{"kind": "Pod",\n "metadata": {"name": }}',
        [
            (
                None,
                None,
                None,
                None,
                None,
                "not valid JSON: JSON is malformed: invalid character (line 2, column 23)",
            )
        ],
        source="bad.json",
    ),
]


@pytest.mark.parametrize("case", BADS, ids=attrgetter("name"))
def test_errors_name_file_object_and_path(case: Bad) -> None:
    with pytest.raises(LoadErrors) as caught:
        load_text(case.text, source=case.source)
    got = [(e.index, e.kind, e.namespace, e.name, e.path, e.reason) for e in caught.value.errors]
    assert got == case.want
    assert all(e.file == case.source for e in caught.value.errors)


def test_every_error_of_a_file_is_reported_with_its_index() -> None:
    text = (
        "kind: List\nitems:\n"
        "- {kind: Pod, metadata: {name: ok-1}}\n"
        "- {kind: Pod, metadata: {name: bad-1, namespace: a}, spec: {priority: high}}\n"
        "- {kind: Node, metadata: {name: ok-2}}\n"
        "---\n"
        "kind: Node\nmetadata: {name: bad-2}\nstatus: {allocatable: {pods: -110}}\n"
        "---\n"
        "kind: Secret\nmetadata: {name: creds}\n"
    )
    with pytest.raises(LoadErrors) as caught:
        load_text(text, source="cluster.yaml")
    assert [(e.index, e.kind, e.object_ref) for e in caught.value.errors] == [
        (1, "Pod", "a/bad-1"),
        (3, "Node", "bad-2"),
        (4, "Secret", "creds"),
    ]
    assert str(caught.value).splitlines() == [
        "3 objects could not be loaded:",
        "  cluster.yaml: object 1 (Pod a/bad-1) at $.spec.priority: Expected `int | null`, got `str`",
        "  cluster.yaml: object 3 (Node bad-2) at $.status.allocatable['pods']: quantity '-110' is negative",
        "  cluster.yaml: object 4 (Secret creds) at $.kind: unknown kind 'Secret'; Podium knows Node, "
        "PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, PriorityClass, ReplicaSet, "
        "ReplicationController, Service, StatefulSet, StorageClass",
    ]


def test_one_error_renders_alone() -> None:
    with pytest.raises(LoadErrors) as caught:
        load_text("kind: Pod\nmetadata: {}\n", source="-")
    assert str(caught.value) == (
        "-: object 0 (Pod) at $.metadata.name: name or generateName is required"
    )
    assert isinstance(caught.value.errors[0], LoadError)
    assert caught.value.code == "invalid"


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(LoadErrors) as caught:
        load_file(missing)
    assert str(caught.value) == f"{missing}: cannot read: No such file or directory"


def test_load_files_collects_the_errors_of_every_file(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("kind: Node\nmetadata: {name: n}\n")
    bad_a = tmp_path / "a.json"
    bad_a.write_text('{"kind": "Pod", "metadata": {}}')
    bad_b = tmp_path / "b.yaml"
    bad_b.write_text("kind: Pod\nmetadata: {name: p}\nspec: {nodeName: 7}\n")
    with pytest.raises(LoadErrors) as caught:
        load_files([good, bad_a, bad_b])
    assert [(e.file, e.path) for e in caught.value.errors] == [
        (str(bad_a), "$.metadata.name"),
        (str(bad_b), "$.spec.nodeName"),
    ]
    assert [x.metadata.name for x in load_files([good, good])] == ["n", "n"]


# --------------------------------------------------------------------------- other kinds

ALL_KINDS = """\
apiVersion: v1
kind: List
items:
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: shop}}
- {apiVersion: v1, kind: Node, metadata: {name: n1}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: cfg, namespace: shop}}
---
apiVersion: v1
kind: EventList
items:
- {metadata: {name: web.17a, namespace: shop}, reason: Scheduled}
- {metadata: {name: web.17b, namespace: shop}, reason: Pulled}
---
apiVersion: v1
kind: PodList
items:
- {metadata: {name: web-1, namespace: shop}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg-2}
"""


def test_load_all_skips_the_kinds_podium_does_not_schedule_and_counts_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(ALL_KINDS)
    loaded = load_all([path])
    assert [(type(x).__name__, x.metadata.name) for x in loaded.objects] == [
        ("Node", "n1"),
        ("Pod", "web-1"),
    ]
    # Items of a typed list of another kind (EventList) take its kind, as PodList's do.
    assert loaded.skipped == {"ConfigMap": 2, "Event": 2, "Deployment": 1}
    # Each object's place in its file counts the skipped ones, as a LoadError does.
    assert loaded.origins == [(str(path), 1), (str(path), 5)]


def test_load_all_strict_refuses_each_unknown_kind_naming_file_object_and_kind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(ALL_KINDS)
    with pytest.raises(LoadErrors) as caught:
        load_all([path], strict=True)
    assert [(e.index, e.kind, e.object_ref, e.path) for e in caught.value.errors] == [
        (0, "Deployment", "shop/web", "$.kind"),
        (2, "ConfigMap", "shop/cfg", "$.kind"),
        (3, "Event", "shop/web.17a", "$.kind"),
        (4, "Event", "shop/web.17b", "$.kind"),
        (6, "ConfigMap", "cfg-2", "$.kind"),
    ]
    assert str(caught.value.errors[0]).startswith(
        f"{path}: object 0 (Deployment shop/web) at $.kind: unknown kind 'Deployment'; "
    )


@pytest.mark.parametrize(
    ("name", "text", "path", "reason"),
    [
        (
            "a malformed object of a known kind",
            "kind: ConfigMap\nmetadata: {name: c}\n---\nkind: Pod\nmetadata: {name: p}\n"
            "spec: {nodeName: 7}\n",
            "$.spec.nodeName",
            "Expected `str`, got `int`",
        ),
        ("an empty kind", "kind: ''\nmetadata: {name: p}\n", "$.kind", MISSING_KIND),
        (
            "an item of a kind: List without a kind",
            "kind: List\nitems: [{metadata: {name: p}}]\n",
            "$.kind",
            MISSING_KIND,
        ),
        (
            "a kind that is not a string",
            "kind: 7\nmetadata: {name: p}\n",
            "$.kind",
            "Expected `str`, got `int`",
        ),
    ],
)
def test_load_all_still_refuses_malformed_objects(
    tmp_path: Path, name: str, text: str, path: str, reason: str
) -> None:
    file = tmp_path / "f.yaml"
    file.write_text(text)
    with pytest.raises(LoadErrors) as caught:
        load_all([file])
    (error,) = caught.value.errors
    assert (error.path, error.reason) == (path, reason)


def test_load_all_reads_stdin_in_its_place(tmp_path: Path) -> None:
    import io

    path = tmp_path / "n.yaml"
    path.write_text("kind: Node\nmetadata: {name: n1}\n")
    stdin = io.BytesIO(b'{"kind": "Secret", "metadata": {"name": "s"}}')
    loaded = load_all(["-", path], stdin=stdin)
    assert loaded.skipped == {"Secret": 1}
    assert loaded.origins == [(str(path), 0)]


def test_error_at_names_the_file_and_the_object_of_a_later_rule(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(ALL_KINDS)
    loaded = load_all([path])
    error = loaded.error_at(
        1, "no PriorityClass with name x was found", path="$.spec.priorityClassName"
    )
    assert str(error) == (
        f"{path}: object 5 (Pod shop/web-1) at $.spec.priorityClassName: "
        "no PriorityClass with name x was found"
    )


# --------------------------------------------------------------------------- one object


def test_decode_object_names_the_object_and_the_path() -> None:
    raw = {"kind": "Pod", "metadata": {"name": "web-1"}, "spec": {"overhead": {"cpu": "-5m"}}}
    with pytest.raises(InvalidObject) as caught:
        decode_object(raw)
    assert caught.value.path == "$.spec.overhead['cpu']"
    assert (
        str(caught.value)
        == "Pod default/web-1 at $.spec.overhead['cpu']: quantity '-5m' is negative"
    )


def test_decode_object_defaults_the_namespace_without_touching_the_input() -> None:
    raw = {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
    claim = decode_object(raw)
    assert claim.metadata.namespace == "default"
    assert raw == {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"}}
    assert msgspec.structs.replace(claim.metadata, namespace="") == o.ObjectMeta(name="data")


# --------------------------------------------------------------------------- single documents


@dataclass(frozen=True)
class Doc:
    name: str
    text: str
    want: object = None
    error: str | None = None
    source: str = "<text>"
    extra: dict[str, object] = field(default_factory=dict)


DOCS = [
    Doc("yaml mapping", "a: 1\nb: 2024-01-01\n", {"a": 1, "b": "2024-01-01"}),
    Doc("json mapping", '{"a": [1, 2]}', {"a": [1, 2]}),
    Doc("empty", "", None),
    Doc("two documents", "a: 1\n---\nb: 2\n", error="<text>: expected one document, found 2"),
    Doc("bad json", "{", error="c.json: not valid JSON: Input data was truncated", source="c.json"),
]


@pytest.mark.parametrize("case", DOCS, ids=attrgetter("name"))
def test_read_document(case: Doc) -> None:
    if case.error is None:
        assert read_document(case.text, source=case.source) == case.want
    else:
        with pytest.raises(LoadErrors) as caught:
            read_document(case.text, source=case.source)
        assert str(caught.value) == case.error


# --------------------------------------------------------------------------- objects without kind


@dataclass(frozen=True)
class Kindless:
    name: str
    raw: dict[str, object]
    kind: str  # what it is read as
    field: str  # the field that said so


_META = {"metadata": {"name": "x"}}
KINDLESS = [
    Kindless(
        "a Node by its status.nodeInfo",
        {**_META, "status": {"nodeInfo": {"kubeletVersion": "v1.30.1"}}},
        "Node",
        "status.nodeInfo",
    ),
    Kindless(
        "a Node by its spec.providerID",
        {**_META, "spec": {"providerID": "aws:///eu-west-1a/i-0abc"}},
        "Node",
        "spec.providerID",
    ),
    Kindless(
        "a Node by its spec.podCIDR",
        {**_META, "spec": {"podCIDR": "10.244.1.0/24"}},
        "Node",
        "spec.podCIDR",
    ),
    Kindless(
        "a Pod by its spec.containers",
        {**_META, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        "Pod",
        "spec.containers",
    ),
    Kindless(
        "a Pod with pod-level resources is still a Pod",
        {**_META, "spec": {"containers": [{"name": "c"}], "resources": {"requests": {"cpu": "1"}}}},
        "Pod",
        "spec.containers",
    ),
    Kindless(
        "a PersistentVolume by its spec.persistentVolumeReclaimPolicy",
        {
            **_META,
            "spec": {"persistentVolumeReclaimPolicy": "Retain", "accessModes": ["ReadWriteOnce"]},
        },
        "PersistentVolume",
        "spec.persistentVolumeReclaimPolicy",
    ),
    Kindless(
        "a PersistentVolumeClaim by its spec.accessModes and spec.resources",
        {
            **_META,
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        "PersistentVolumeClaim",
        "spec.accessModes and spec.resources",
    ),
    Kindless(
        "a Service by its spec.clusterIP",
        {**_META, "spec": {"clusterIP": "10.96.0.10", "selector": {"app": "dns"}}},
        "Service",
        "spec.clusterIP",
    ),
    Kindless(
        "a StatefulSet by its spec.serviceName",
        {**_META, "spec": {"serviceName": "db", "selector": {"matchLabels": {"a": "b"}}}},
        "StatefulSet",
        "spec.serviceName",
    ),
    Kindless(
        "a StorageClass by its provisioner",
        {**_META, "provisioner": "ebs.csi.aws.com"},
        "StorageClass",
        "provisioner",
    ),
    Kindless("a PriorityClass by its value", {**_META, "value": 1000}, "PriorityClass", "value"),
    Kindless(
        "a PodDisruptionBudget by its spec.minAvailable",
        {**_META, "spec": {"minAvailable": 1}},
        "PodDisruptionBudget",
        "spec.minAvailable",
    ),
]


@pytest.mark.parametrize("case", KINDLESS, ids=attrgetter("name"))
def test_an_object_without_kind_is_read_as_what_its_fields_say(case: Kindless) -> None:
    text = json.dumps(case.raw)
    objects = load_text(text, source="x.json")
    assert [type(x).__name__ for x in objects] == [case.kind]


@pytest.mark.parametrize("case", KINDLESS, ids=attrgetter("name"))
def test_load_all_warns_once_naming_the_file_the_object_and_the_field(
    case: Kindless, tmp_path: Path
) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(case.raw))
    loaded = load_all([path])
    assert [type(x).__name__ for x in loaded.objects] == [case.kind]
    api_version = loaded.objects[0].api_version
    assert loaded.warnings == [
        f"{path}: object 0 (x) has no kind; read as a {case.kind} for its {case.field} "
        f"(add `kind: {case.kind}` and `apiVersion: {api_version}` to say so)"
    ]


@pytest.mark.parametrize(
    ("name", "raw", "reason"),
    [
        ("no field says what it is", {"metadata": {"name": "x"}, "data": {"k": "v"}}, MISSING_KIND),
        # A Deployment has a ReplicaSet's fields: neither is guessed.
        (
            "a Deployment or a ReplicaSet",
            {"metadata": {"name": "x"}, "spec": {"replicas": 2, "selector": {}, "template": {}}},
            MISSING_KIND,
        ),
        (
            "fields of two kinds",
            {"metadata": {"name": "x"}, "spec": {"containers": [], "podCIDR": "10.0.0.0/24"}},
            f"{MISSING_KIND}; its fields fit more than one kind (a Node's spec.podCIDR, "
            "a Pod's spec.containers)",
        ),
        (
            "a null field is no evidence",
            {"metadata": {"name": "x"}, "spec": {"containers": None}},
            MISSING_KIND,
        ),
    ],
)
def test_an_object_without_kind_its_fields_do_not_name_says_how_to_fix_it(
    name: str, raw: dict[str, object], reason: str
) -> None:
    with pytest.raises(LoadErrors) as caught:
        load_text(json.dumps(raw), source="x.json")
    (error,) = caught.value.errors
    assert (error.path, error.reason) == ("$.kind", reason)
    assert str(error) == f"x.json: object 0 (x) at $.kind: {reason}"


def test_a_wrong_field_of_an_object_read_without_kind_names_the_kind_it_was_read_as() -> None:
    raw = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]},
    }
    with pytest.raises(LoadErrors) as caught:
        load_text(json.dumps(raw), source="p.json")
    (error,) = caught.value.errors
    assert (error.kind, error.namespace, error.name) == ("Pod", "default", "p")
    assert error.path == "$.spec.containers[0].resources.requests['cpu']"


def test_client_go_files_load_one_object_a_file_with_one_warning_each() -> None:
    files = [CLIENT_GO / "node_edge-7.json", CLIENT_GO / "pod_telemetry_collector-0.json"]
    loaded = load_all(files)
    assert [(type(x).__name__, x.metadata.namespace, x.metadata.name) for x in loaded.objects] == [
        ("Node", "", "edge-7"),
        ("Pod", "telemetry", "collector-0"),
    ]
    assert loaded.warnings == [
        f"{files[0]}: object 0 (edge-7) has no kind; read as a Node for its status.nodeInfo "
        "(add `kind: Node` and `apiVersion: v1` to say so)",
        f"{files[1]}: object 0 (telemetry/collector-0) has no kind; read as a Pod for its "
        "spec.containers (add `kind: Pod` and `apiVersion: v1` to say so)",
    ]


def test_a_client_go_secret_cannot_be_told_and_says_how_to_fix_it() -> None:
    path = CLIENT_GO / "secret_telemetry_token.json"
    with pytest.raises(LoadErrors) as caught:
        load_all([path])
    assert [str(e) for e in caught.value.errors] == [
        f"{path}: object 0 (telemetry/collector-token) at $.kind: {MISSING_KIND}"
    ]


@pytest.mark.skipif(not TURN3_INSIGHTS.is_dir(), reason="the shared real files are not here")
def test_the_insights_archive_loads_unedited() -> None:
    files = sorted(TURN3_INSIGHTS.glob("*.json"))
    loaded = load_all(files)
    kinds = sorted(type(x).__name__ for x in loaded.objects)
    assert kinds == ["Node", "Node", "Pod", "Pod"]
    assert len(loaded.warnings) == len(files) == 4
    for file, warning in zip(files, loaded.warnings, strict=True):
        assert warning.startswith(f"{file}: object 0 (")
