"""``null`` read as the API server reads it (protocol/nulls.py), in files and on the wire.

Kubernetes decodes with Go's encoding/json rules (sigs.k8s.io/json keeps them): "The JSON null
value unmarshals into an interface, map, pointer, or slice by setting that Go value to nil.
Because null is often used in JSON to mean 'not present', unmarshaling a JSON null into any
other Go type has no effect on the value" (encoding/json ``Unmarshal``). So a ``null`` field is
the field's zero value, which defaulting treats as absent, and a ``null`` value in a
``map[string]string`` (labels, annotations, nodeSelector, matchLabels) is a new entry holding
``""``. YAML's empty value (``spec:``) is ``null``.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec
import pytest
import yaml

from podium.protocol import objects as o
from podium.protocol import wire as w
from podium.protocol.errors import InvalidRequest, LoadErrors
from podium.protocol.framing import Codec
from podium.protocol.loader import load_text
from podium.protocol.nulls import absent_nulls


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    want: o.KubeObject


def _meta(name: str, **kw: Any) -> o.ObjectMeta:
    return o.ObjectMeta(name=name, **kw)


CASES = [
    Case(
        "node spec null",
        "kind: Node\nmetadata: {name: n}\nspec: null\n",
        o.Node(metadata=_meta("n")),
    ),
    Case(
        "empty spec: and status: in YAML are absent",
        "kind: Node\nmetadata: {name: n}\nspec:\nstatus:\n",
        o.Node(metadata=_meta("n")),
    ),
    Case(
        "metadata labels left empty",
        "kind: Node\nmetadata: {name: n, labels: , annotations: null}\n",
        o.Node(metadata=_meta("n")),
    ),
    Case(
        "a null label value is the empty string",
        "kind: Node\nmetadata: {name: n, labels: {gpu: null, zone: a}}\n",
        o.Node(metadata=_meta("n", labels={"gpu": "", "zone": "a"})),
    ),
    Case(
        "a null annotation value is the empty string",
        "kind: Node\nmetadata: {name: n, annotations: {note: }}\n",
        o.Node(metadata=_meta("n", annotations={"note": ""})),
    ),
    Case(
        "nodeSelector and matchLabels null values",
        "kind: Pod\nmetadata: {name: p}\n"
        "spec:\n  nodeSelector: {disk: null}\n"
        "  topologySpreadConstraints:\n"
        "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule,\n"
        "     labelSelector: {matchLabels: {app: null}, matchExpressions: null}}\n",
        o.Pod(
            metadata=_meta("p", namespace="default"),
            spec=o.PodSpec(
                node_selector={"disk": ""},
                topology_spread_constraints=[
                    o.TopologySpreadConstraint(
                        max_skew=1,
                        topology_key="zone",
                        when_unsatisfiable="DoNotSchedule",
                        label_selector=o.LabelSelector(match_labels={"app": ""}),
                    )
                ],
            ),
        ),
    ),
    Case(
        "container resources null, and fields left empty",
        "kind: Pod\nmetadata: {name: p, namespace: shop}\n"
        "spec:\n  containers:\n  - {name: c, resources: null, ports: null}\n"
        "  tolerations:\n  affinity: null\n  schedulerName: null\n  priority: null\n"
        "status: {conditions: null, phase: null}\n",
        o.Pod(
            metadata=_meta("p", namespace="shop"),
            spec=o.PodSpec(containers=[o.Container(name="c")]),
        ),
    ),
    Case(
        "a resource list left empty",
        "kind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, resources: {requests: , limits: {cpu: '1'}}}]}\n",
        o.Pod(
            metadata=_meta("p", namespace="default"),
            spec=o.PodSpec(
                containers=[
                    o.Container(
                        name="c",
                        resources=o.ResourceRequirements(limits={"cpu": o.Quantity("1")}),
                    )
                ]
            ),
        ),
    ),
    Case(
        "Service selector null",
        "kind: Service\nmetadata: {name: s, namespace: shop}\nspec: {selector: null}\n",
        o.Service(metadata=_meta("s", namespace="shop")),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_a_file_with_nulls_loads_as_the_api_server_reads_it(case: Case) -> None:
    (got,) = load_text(case.text, source="helm.yaml")
    assert got == case.want


@pytest.mark.parametrize(
    ("name", "text", "path", "reason"),
    [
        (
            "a null name is no name",
            "kind: Pod\nmetadata: {name: null}\n",
            "$.metadata.name",
            "name or generateName is required",
        ),
        (
            "a null metadata is no metadata",
            "kind: Node\nmetadata:\n",
            "$.metadata",
            "missing required field",
        ),
        (
            "a bad field beside a null one keeps its path",
            "kind: Pod\nmetadata: {name: p, labels: null}\n"
            "spec: {nodeSelector: {a: null}, containers: [{resources: {requests: {cpu: lots}}}]}\n",
            "$.spec.containers[0].resources.requests['cpu']",
            "quantity 'lots' does not match the Kubernetes quantity grammar "
            "(e.g. '100m', '1.5', '1Gi', '2e3', '500M')",
        ),
        (
            "a null quantity is still refused",
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{resources: {requests: {cpu: null}}}]}\n",
            "$.spec.containers[0].resources.requests['cpu']",
            "Expected a quantity (string or number), got `NoneType`",
        ),
        (
            "a null list item is still refused",
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [null]}\n",
            "$.spec.containers[0]",
            "Expected `object`, got `null`",
        ),
    ],
)
def test_a_null_where_a_value_is_required_is_still_an_error(
    name: str, text: str, path: str, reason: str
) -> None:
    with pytest.raises(LoadErrors) as caught:
        load_text(text, source="helm.yaml")
    (error,) = caught.value.errors
    assert (error.path, error.reason) == (path, reason)


def test_an_object_without_nulls_is_returned_as_it_is() -> None:
    raw = {"kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}
    assert absent_nulls(raw, o.Pod) is raw


def test_only_kubernetes_objects_read_null_as_absent() -> None:
    # The wire's own fields keep msgspec's rules: a null request id is refused, not dropped.
    raw = {
        "msg": "put",
        "id": None,
        "objects": [{"kind": "Node", "metadata": {"name": "n"}, "spec": None}],
    }
    assert absent_nulls(raw, w.ClientMessage) == {
        "msg": "put",
        "id": None,
        "objects": [{"kind": "Node", "metadata": {"name": "n"}}],
    }


@pytest.fixture(params=["json", "msgpack"])
def proto(request: pytest.FixtureRequest) -> Codec:
    return Codec(request.param)


def _encode(proto: Codec, doc: Any) -> bytes:
    return (msgspec.json if proto.encoding == "json" else msgspec.msgpack).encode(doc)


def test_a_put_with_nulls_decodes_as_the_same_file_does(proto: Codec) -> None:
    case = CASES[5]  # nodeSelector and matchLabels null values
    raw = yaml.safe_load(case.text)
    msg = proto.decode_request(_encode(proto, {"msg": "put", "id": 7, "objects": [raw]}))
    assert isinstance(msg, w.Put)
    # A file defaults the namespace at load; the store does it for a put.
    assert msg.objects == [msgspec.structs.replace(case.want, metadata=_meta("p"))]


def test_a_simulate_request_reads_its_pods_nulls(proto: Codec) -> None:
    pod = {"kind": "Pod", "metadata": {"name": "p", "labels": None}, "spec": None, "status": None}
    msg = proto.decode_request(_encode(proto, {"msg": "simulate", "id": 3, "pod": pod}))
    assert isinstance(msg, w.Simulate)
    assert msg.pod == o.Pod(metadata=_meta("p"))


def test_a_put_whose_null_hides_a_bad_field_names_the_bad_field(proto: Codec) -> None:
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "labels": None},
        "spec": {"nodeName": 7, "affinity": None},
    }
    with pytest.raises(InvalidRequest) as caught:
        proto.decode_request(_encode(proto, {"msg": "put", "id": 1, "objects": [pod]}))
    assert caught.value.path == "$.objects[0].spec.nodeName"
    assert caught.value.request_id == 1
