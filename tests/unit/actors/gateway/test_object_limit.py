"""The object-size limit at the gateway (actors/gateway/object_limit.py): Kubernetes' message,
one error per object over the limit with its path, and the fast path that lets small frames
through unmeasured without letting an object over the limit through."""

from __future__ import annotations

import msgspec
import pytest
from builders import make_node, make_pod, make_pod_group

from podium.actors.gateway.object_limit import MAX_EXPANSION, too_large
from podium.protocol.framing import Codec
from podium.protocol.objects import encode_msgpack
from podium.protocol.wire import Get, ObjectError, Put


def _put(*objects: object) -> Put:
    return Put(id=7, objects=list(objects))  # type: ignore[arg-type]  # KubeObjects


def test_an_object_over_the_limit_is_refused_with_its_path() -> None:
    small = make_pod("small").obj()
    big = make_pod("big").annotation("a", "x" * 5000).obj()
    size = len(encode_msgpack(big))
    refusal = too_large(_put(small, big), frame_bytes=10_000, limit=4096)
    assert refusal is not None
    assert (refusal.id, refusal.code, refusal.message, refusal.path) == (
        7,
        "too_large",
        "Request entity too large: limit is 4096",
        "$.objects[1]",
    )
    assert refusal.errors == [
        ObjectError(
            index=1,
            kind="Pod",
            namespace="default",
            name="big",
            path="$",
            message=f"Request entity too large: limit is 4096 (the object is {size} bytes)",
        )
    ]


def test_several_objects_over_the_limit_each_get_an_error_and_no_single_path() -> None:
    node = make_node("n1").obj()
    node = msgspec.structs.replace(
        node, metadata=msgspec.structs.replace(node.metadata, annotations={"a": "x" * 5000})
    )
    big = make_pod("big").annotation("a", "x" * 5000).obj()
    refusal = too_large(_put(big, make_pod("ok").obj(), node), frame_bytes=20_000, limit=4096)
    assert refusal is not None
    assert refusal.path is None
    assert [(e.index, e.kind, e.namespace, e.name) for e in refusal.errors] == [
        (0, "Pod", "default", "big"),
        (2, "Node", "", "n1"),
    ]


@pytest.mark.parametrize(
    "msg",
    [_put(make_pod("a").obj(), make_pod("b").obj()), Get(id=1, kind="Pod")],
    ids=["objects within the limit", "not a put"],
)
def test_what_is_within_the_limit_passes(msg: Put | Get) -> None:
    assert too_large(msg, frame_bytes=1_000_000, limit=4096) is None


def test_a_small_frame_is_not_measured() -> None:
    # Under a third of the limit the objects are not encoded: this one would be refused.
    big = make_pod("big").annotation("a", "x" * 5000).obj()
    assert too_large(_put(big), frame_bytes=4096 // MAX_EXPANSION, limit=4096) is None


def test_a_frame_under_the_limit_may_hold_an_object_over_it() -> None:
    # A quantity written as the JSON number 1e15 is stored as its text "1000000000000000.0":
    # the object is about twice its frame, so a frame below the limit is measured too.
    requests = ",".join(f'"r{i}":1e15' for i in range(2000))
    pod = (
        '{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"},"spec":{"containers":'
        '[{"name":"c","resources":{"requests":{' + requests + "}}}]}}"
    )
    payload = ('{"msg":"put","id":1,"objects":[' + pod + "]}").encode()
    msg = Codec("json").decode_request(payload)
    assert isinstance(msg, Put)
    stored = len(encode_msgpack(msg.objects[0]))
    assert len(payload) < 40_000 < stored < MAX_EXPANSION * len(payload)
    refusal = too_large(msg, frame_bytes=len(payload), limit=40_000)
    assert refusal is not None
    assert refusal.path == "$.objects[0]"


def test_a_pod_group_over_the_limit_is_refused_as_any_kind() -> None:
    group = (
        make_pod_group("tf")
        .ns("ml")
        .min_member(2, "scheduling.volcano.sh/v1beta1")
        .spec(minResources={f"example.com/r{i}": "1" for i in range(400)})
        .obj()
    )
    size = len(encode_msgpack(group))
    assert size > 4096
    refusal = too_large(_put(make_pod("ok").obj(), group), frame_bytes=size, limit=4096)
    assert refusal is not None and refusal.path == "$.objects[1]"
    assert [(e.kind, e.namespace, e.name, e.path) for e in refusal.errors] == [
        ("PodGroup", "ml", "tf", "$")
    ]
