"""The codecs of the wire messages (protocol/framing.py, protocol/wire.py).

Every case runs in both encodings through the ``proto`` fixture (STYLE.md, "Tests").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, get_args

import msgspec
import pytest
from protocol_schema import message_examples

from podium.protocol import wire as w
from podium.protocol.errors import InvalidRequest, MalformedFrame, ProtocolError
from podium.protocol.framing import (
    Codec,
    decode_hello,
    decode_hello_reply,
    encode_hello,
)

EXAMPLES = message_examples()
AFTER_HELLO = [m for m in EXAMPLES if not isinstance(m, w.Hello | w.HelloReply)]


def _id(msg: Any) -> str:
    return f"{type(msg).__name__}-{getattr(msg, 'id', '')}-{EXAMPLES.index(msg)}"


@pytest.fixture(params=["json", "msgpack"])
def proto(request: pytest.FixtureRequest) -> Codec:
    """A codec for each encoding; every test using it runs twice."""
    return Codec(request.param)


def _raw(proto: Codec) -> Callable[[Any], bytes]:
    """Encodes plain data (for payloads no message type would produce) in ``proto``'s encoding."""
    return msgspec.json.encode if proto.encoding == "json" else msgspec.msgpack.encode


def _decode(proto: Codec, msg: Any, payload: bytes) -> Any:
    return (
        proto.decode_request(payload) if isinstance(msg, w.Request) else proto.decode_reply(payload)
    )


# --------------------------------------------------------------------------- round trips


def test_every_message_class_has_an_example() -> None:
    classes = {w.Hello, w.HelloReply, *get_args(w.ClientMessage), *get_args(w.ServerMessage)}
    assert classes - {type(m) for m in EXAMPLES} == set()
    assert len(classes) == 23


@pytest.mark.parametrize("msg", AFTER_HELLO, ids=_id)
def test_every_message_round_trips_exactly(proto: Codec, msg: Any) -> None:
    payload = proto.encode(msg)
    decoded = _decode(proto, msg, payload)
    assert type(decoded) is type(msg)
    assert decoded == msg
    # Byte-identical re-encoding: quantities kept their text ("2e3" is not re-rendered "2k").
    assert proto.encode(decoded) == payload


def test_quantities_keep_the_text_they_were_written_as(proto: Codec) -> None:
    put = next(m for m in EXAMPLES if isinstance(m, w.Put))
    decoded = proto.decode_request(proto.encode(put))
    assert isinstance(decoded, w.Put)
    pod = decoded.objects[1]
    assert isinstance(pod, w.Pod)
    resources = pod.spec.containers[0].resources
    assert {k: q.text for k, q in resources.requests.items()} == {"cpu": "100m", "memory": "1.5Gi"}
    # A JSON number becomes the quantity's text and is sent back as a string.
    assert {k: q.text for k, q in resources.limits.items()} == {
        "cpu": "2e3",
        "memory": "2147483648",
    }
    assert resources.limits["cpu"].milli_value() == 2_000_000


def test_payloads_are_not_framed(proto: Codec) -> None:
    payload = proto.encode(w.Stats(id=1))
    if proto.encoding == "json":
        assert payload.startswith(b"{")
    else:
        assert payload[0] & 0xF0 == 0x80  # a msgpack fixmap


def test_the_json_encoding_is_plain_json_with_msg_tags_and_k8s_field_names() -> None:
    codec = Codec("json")
    assert json.loads(codec.encode(w.Get(id=3, kind="Pod"))) == {
        "msg": "get",
        "id": 3,
        "kind": "Pod",
        "name": "",
        "namespace": None,
        "label_selector": "",
        "limit": 0,
        "continue": "",
    }
    put = next(m for m in EXAMPLES if isinstance(m, w.Put))
    pod = json.loads(codec.encode(put))["objects"][1]
    assert pod["kind"] == "Pod"
    container = pod["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "1.5Gi"}
    assert container["ports"] == [{"containerPort": 80, "hostPort": 8080}]
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


def test_msgpack_carries_the_same_maps_as_json() -> None:
    for msg in AFTER_HELLO:
        as_json = json.loads(Codec("json").encode(msg))
        as_msgpack = msgspec.msgpack.decode(Codec("msgpack").encode(msg))
        assert as_msgpack == as_json, type(msg).__name__


def test_codec_names_its_encoding_and_refuses_others() -> None:
    assert Codec("msgpack").encoding == "msgpack"
    assert repr(Codec("json")) == "Codec('json')"
    with pytest.raises(ValueError, match="unknown encoding 'xml'"):
        Codec("xml")  # type: ignore[arg-type]  # the point of the test


# --------------------------------------------------------------------------- invalid requests

POD_WITH_BAD_CPU = {
    "kind": "Pod",
    "metadata": {"name": "web-1"},
    "spec": {"containers": [{"resources": {"requests": {"memory": "1Gi", "cpu": "1x"}}}]},
}


@dataclass(frozen=True)
class Invalid:
    name: str
    payload: Any
    request_id: int
    path: str | None
    message: str
    extra: dict[str, Any] = field(default_factory=dict)


INVALID = [
    Invalid(
        "bad quantity names the mapping key",
        {"msg": "put", "id": 7, "objects": [POD_WITH_BAD_CPU]},
        7,
        "$.objects[0].spec.containers[0].resources.requests['cpu']",
        "quantity '1x' does not match the Kubernetes quantity grammar (e.g. '100m', '1.5', '1Gi', "
        "'2e3', '500M') at $.objects[0].spec.containers[0].resources.requests['cpu']",
    ),
    Invalid(
        "negative quantity",
        {
            "msg": "simulate",
            "id": 8,
            "pod": {**POD_WITH_BAD_CPU, "spec": {"overhead": {"cpu": "-1"}}},
        },
        8,
        "$.pod.spec.overhead['cpu']",
        "quantity '-1' is negative at $.pod.spec.overhead['cpu']",
    ),
    Invalid(
        "a pod group's rule names its field",
        {
            "msg": "put",
            "id": 8,
            "objects": [
                {
                    "kind": "PodGroup",
                    "apiVersion": "scheduling.volcano.sh/v1beta1",
                    "metadata": {"name": "g", "namespace": "ml"},
                    "spec": {"minMember": 0},
                }
            ],
        },
        8,
        "$.objects[0].spec.minMember",
        "spec.minMember: Invalid value: 0: must be greater than zero at "
        "$.objects[0].spec.minMember",
    ),
    Invalid(
        "unknown msg names the tag and the requests",
        {"msg": "nope", "id": 3},
        3,
        "$.msg",
        "unknown message 'nope' at $.msg; expected one of put, delete, get, watch, cancel, "
        "explain, simulate, reload_policy, stats",
    ),
    Invalid(
        "a reply sent as a request",
        {"msg": "stats_reply", "id": 4},
        4,
        "$.msg",
        "unknown message 'stats_reply' at $.msg; expected one of put, delete, get, watch, "
        "cancel, explain, simulate, reload_policy, stats",
    ),
    Invalid("missing msg", {"id": 3, "kind": "Pod"}, 3, "$.msg", "missing required field at $.msg"),
    Invalid(
        "missing field", {"msg": "get", "id": 9}, 9, "$.kind", "missing required field at $.kind"
    ),
    Invalid(
        "missing id",
        {"msg": "get", "kind": "Pod"},
        -1,
        "$.id",
        "missing required field at $.id",
    ),
    Invalid(
        "string id is not echoed",
        {"msg": "get", "id": "7", "kind": "Pod"},
        -1,
        "$.id",
        "Expected `int`, got `str` at $.id",
    ),
    Invalid(
        "negative id is not echoed",
        {"msg": "stats", "id": -2},
        -1,
        "$.id",
        "Expected `int` >= 0 at $.id",
    ),
    Invalid(
        "id beyond int64 is not echoed",
        {"msg": "stats", "id": 2**63},
        -1,
        "$.id",
        "Expected `int` <= 9223372036854775807 at $.id",
    ),
    Invalid(
        "the largest id is echoed",
        {"msg": "cancel", "id": 2**63 - 1},
        2**63 - 1,
        "$.target",
        "missing required field at $.target",
    ),
    Invalid(
        "unknown kind names the kinds",
        {"msg": "put", "id": 1, "objects": [{"kind": "Deployment", "metadata": {"name": "d"}}]},
        1,
        "$.objects[0].kind",
        "unknown kind 'Deployment' at $.objects[0].kind; expected one of Node, Pod, "
        "PersistentVolume, PersistentVolumeClaim, StorageClass, Service, "
        "ReplicationController, ReplicaSet, StatefulSet, PriorityClass, PodDisruptionBudget, "
        "PodGroup",
    ),
    Invalid(
        "simulate takes only a pod",
        {"msg": "simulate", "id": 2, "pod": {"kind": "Node", "metadata": {"name": "n"}}},
        2,
        "$.pod.kind",
        "unknown kind 'Node' at $.pod.kind; expected 'Pod'",
    ),
    Invalid(
        "put needs at least one object",
        {"msg": "put", "id": 5, "objects": []},
        5,
        "$.objects",
        "Expected `array` of length >= 1 at $.objects",
    ),
    Invalid(
        "wrong type deep in an object",
        {
            "msg": "put",
            "id": 6,
            "objects": [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": "high"}}],
        },
        6,
        "$.objects[0].spec.priority",
        "Expected `int | null`, got `str` at $.objects[0].spec.priority",
    ),
    Invalid(
        "wrong label value type names the key",
        {
            "msg": "put",
            "id": 6,
            "objects": [{"kind": "Node", "metadata": {"name": "n", "labels": {"a": "1", "b": 2}}}],
        },
        6,
        "$.objects[0].metadata.labels['b']",
        "Expected `str`, got `int` at $.objects[0].metadata.labels['b']",
    ),
    Invalid(
        "delete refs forbid unknown fields",
        {"msg": "delete", "id": 2, "refs": [{"kind": "Pod", "name": "a", "nmespace": "x"}]},
        2,
        "$.refs[0].nmespace",
        "unknown field at $.refs[0].nmespace",
    ),
    Invalid(
        "watch from a negative revision",
        {"msg": "watch", "id": 2, "from_revision": -1},
        2,
        "$.from_revision",
        "Expected `int` >= 0 at $.from_revision",
    ),
    Invalid("not a map", [1, 2], -1, None, "Expected `object`, got `array`"),
    Invalid("a bare string", "put", -1, None, "Expected `object`, got `str`"),
]


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.name)
def test_a_decodable_but_invalid_request_names_its_id_and_path(proto: Codec, case: Invalid) -> None:
    with pytest.raises(InvalidRequest) as info:
        proto.decode_request(_raw(proto)(case.payload))
    err = info.value
    assert (err.request_id, err.path) == (case.request_id, case.path)
    assert err.message == case.message
    assert str(err) == case.message
    assert err.code == "invalid"
    assert isinstance(err, ProtocolError)


@dataclass(frozen=True)
class Rejected:
    name: str
    payload: Any
    message: str
    path: str | None
    errors: list[w.ObjectError]


_GRAMMAR = "(e.g. '100m', '1.5', '1Gi', '2e3', '500M')"
_CPU = "resources.requests['cpu']"

# A request that does not decode, answered as the store answers an object it refuses: the
# reply's path from the request, the entry's from the object (docs/protocol.md, put).
REJECTED = [
    Rejected(
        "a bad quantity in the second object",
        {
            "msg": "put",
            "id": 4,
            "objects": [
                {"kind": "Node", "metadata": {"name": "n1"}},
                {
                    "kind": "Pod",
                    "metadata": {"name": "web", "namespace": "shop"},
                    "spec": {
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1x"}}}]
                    },
                },
            ],
        },
        f"pod shop/web: quantity '1x' does not match the Kubernetes quantity grammar {_GRAMMAR}; "
        "nothing was written",
        f"$.objects[1].spec.containers[0].{_CPU}",
        [
            w.ObjectError(
                index=1,
                kind="Pod",
                namespace="shop",
                name="web",
                path=f"$.spec.containers[0].{_CPU}",
                message=f"quantity '1x' does not match the Kubernetes quantity grammar {_GRAMMAR}",
            )
        ],
    ),
    Rejected(
        "a pod without a name, in the default namespace",
        {"msg": "put", "id": 4, "objects": [{"kind": "Pod", "metadata": {"labels": {"a": "b"}}}]},
        "pod default/<unnamed>: name or generateName is required; nothing was written",
        "$.objects[0].metadata.name",
        [
            w.ObjectError(
                index=0,
                kind="Pod",
                namespace="default",
                name="",
                path="$.metadata.name",
                message="name or generateName is required",
            )
        ],
    ),
    Rejected(
        "an unknown kind: the path leaves the message",
        {"msg": "put", "id": 4, "objects": [{"kind": "Widget", "metadata": {"name": "w"}}]},
        "widget w: unknown kind 'Widget'; expected one of Node, Pod, PersistentVolume, "
        "PersistentVolumeClaim, StorageClass, Service, ReplicationController, ReplicaSet, "
        "StatefulSet, PriorityClass, PodDisruptionBudget, PodGroup; nothing was written",
        "$.objects[0].kind",
        [
            w.ObjectError(
                index=0,
                kind="Widget",
                namespace="",
                name="w",
                path="$.kind",
                message="unknown kind 'Widget'; expected one of Node, Pod, PersistentVolume, "
                "PersistentVolumeClaim, StorageClass, Service, ReplicationController, ReplicaSet, "
                "StatefulSet, PriorityClass, PodDisruptionBudget, PodGroup",
            )
        ],
    ),
    Rejected(
        "a delete's bad ref: a node has no namespace",
        {
            "msg": "delete",
            "id": 4,
            "refs": [{"kind": "Node", "name": "n1", "namespace": "x", "z": 1}],
        },
        "node n1: unknown field; nothing was written",
        "$.refs[0].z",
        [
            w.ObjectError(
                index=0, kind="Node", namespace="", name="n1", path="$.z", message="unknown field"
            )
        ],
    ),
    Rejected(
        "an object that is not a mapping stays the request's error",
        {"msg": "put", "id": 4, "objects": [7]},
        "Expected `object`, got `int` at $.objects[0]",
        "$.objects[0]",
        [],
    ),
    Rejected(
        "an error outside the objects stays the request's error",
        {"msg": "put", "id": 4, "objects": []},
        "Expected `array` of length >= 1 at $.objects",
        "$.objects",
        [],
    ),
]


@pytest.mark.parametrize("case", REJECTED, ids=attrgetter("name"))
def test_an_invalid_object_is_answered_as_a_rejected_object(proto: Codec, case: Rejected) -> None:
    payload = _raw(proto)(case.payload)
    with pytest.raises(InvalidRequest) as info:
        proto.decode_request(payload)
    reply = proto.invalid_reply(payload, info.value)
    assert (reply.id, reply.code, reply.message, reply.path) == (
        4,
        "invalid",
        case.message,
        case.path,
    )
    assert reply.errors == case.errors


def test_a_non_string_mapping_key_is_named_in_msgpack() -> None:
    payload = msgspec.msgpack.encode(
        {
            "msg": "put",
            "id": 3,
            "objects": [{"kind": "Node", "metadata": {"name": "n", "labels": {1: "a"}}}],
        }
    )
    with pytest.raises(InvalidRequest) as info:
        Codec("msgpack").decode_request(payload)
    assert info.value.path == "$.objects[0].metadata.labels[1]"
    assert (
        info.value.message == "Expected `str`, got `int` (a key) at $.objects[0].metadata.labels[1]"
    )
    assert info.value.request_id == 3


def test_an_invalid_reply_names_its_id_and_path(proto: Codec) -> None:
    payload = _raw(proto)({"msg": "error", "id": 3, "code": "oops", "message": "m"})
    with pytest.raises(InvalidRequest) as info:
        proto.decode_reply(payload)
    assert (info.value.request_id, info.value.path) == (3, "$.code")
    assert info.value.message.startswith("Invalid enum value 'oops' at $.code")


def test_a_request_is_not_a_reply(proto: Codec) -> None:
    with pytest.raises(InvalidRequest) as info:
        proto.decode_reply(proto.encode(w.Stats(id=4)))
    assert info.value.request_id == 4
    assert info.value.message.startswith(
        "unknown message 'stats' at $.msg; expected one of put_reply,"
    )


# --------------------------------------------------------------------------- malformed frames

MALFORMED = [
    ("json", b""),
    ("json", b"{"),
    ("json", b'{"msg": "stats", "id": 1'),  # truncated after a valid request's fields
    ("json", b'{"msg": "stats_reply", "id": 1'),  # truncated after an invalid tag
    ("json", b"\xff\xfe"),
    ("json", b'{"msg": "stats"} trailing'),
    ("msgpack", b""),
    ("msgpack", b"\xc1"),  # a byte msgpack never uses
    ("msgpack", b"\x82\xa3ms"),
    ("msgpack", b"\x81\xa3msg"),
]


@pytest.mark.parametrize(("encoding", "payload"), MALFORMED, ids=repr)
def test_bytes_that_are_not_the_encoding_at_all_are_malformed(
    encoding: Any, payload: bytes
) -> None:
    codec = Codec(encoding)
    for decode in (codec.decode_request, codec.decode_reply):
        with pytest.raises(MalformedFrame) as info:
            decode(payload)
        assert not isinstance(info.value, InvalidRequest)
        assert info.value.code == "invalid"
        name = "JSON" if encoding == "json" else "msgpack"
        assert str(info.value).startswith(f"cannot decode a {len(payload)}-byte frame as {name}: ")


def test_msgpack_sent_to_a_json_connection_is_malformed() -> None:
    with pytest.raises(MalformedFrame):
        Codec("json").decode_request(Codec("msgpack").encode(w.Stats(id=1)))


# --------------------------------------------------------------------------- handshake


def test_hello_is_json_and_round_trips() -> None:
    hello = w.Hello(protocol=1, encoding="json", token="t")
    payload = encode_hello(hello)
    assert json.loads(payload) == {"msg": "hello", "protocol": 1, "encoding": "json", "token": "t"}
    assert decode_hello(payload) == hello


def test_hello_defaults_to_msgpack_without_a_token() -> None:
    assert decode_hello(b'{"msg": "hello", "protocol": 1}') == w.Hello(
        protocol=1, encoding="msgpack", token=None
    )


HELLO_INVALID = [
    Invalid(
        "unknown encoding",
        {"msg": "hello", "protocol": 1, "encoding": "xml"},
        -1,
        "$.encoding",
        "Invalid enum value 'xml' at $.encoding",
    ),
    Invalid(
        "unknown field (Hello forbids them)",
        {"msg": "hello", "protocol": 1, "encodng": "json"},
        -1,
        "$.encodng",
        "unknown field at $.encodng",
    ),
    Invalid(
        "a request before the hello",
        {"msg": "stats", "id": 1},
        -1,
        "$.msg",
        "unknown message 'stats' at $.msg; expected 'hello'",
    ),
    Invalid(
        "protocol must be an integer",
        {"msg": "hello", "protocol": "1"},
        -1,
        "$.protocol",
        "Expected `int`, got `str` at $.protocol",
    ),
    Invalid(
        "missing protocol",
        {"msg": "hello"},
        -1,
        "$.protocol",
        "missing required field at $.protocol",
    ),
    Invalid("not a map", ["hello"], -1, None, "Expected `object`, got `array`"),
]


@pytest.mark.parametrize("case", HELLO_INVALID, ids=lambda c: c.name)
def test_an_invalid_hello_is_an_invalid_request_without_an_id(case: Invalid) -> None:
    with pytest.raises(InvalidRequest) as info:
        decode_hello(json.dumps(case.payload).encode())
    assert (info.value.request_id, info.value.path, info.value.message) == (
        case.request_id,
        case.path,
        case.message,
    )


@pytest.mark.parametrize(
    "payload", [b"", b"hello", msgspec.msgpack.encode({"msg": "hello", "protocol": 1})]
)
def test_a_hello_that_is_not_json_is_malformed(payload: bytes) -> None:
    with pytest.raises(MalformedFrame, match="as JSON"):
        decode_hello(payload)


def test_hello_reply_or_error_reply() -> None:
    reply = w.HelloReply(protocol=1, server_version="0.1.0", revision=7)
    assert json.loads(encode_hello(reply)) == {
        "msg": "hello_reply",
        "protocol": 1,
        "server_version": "0.1.0",
        "revision": 7,
    }
    assert decode_hello_reply(encode_hello(reply)) == reply
    refused = w.ErrorReply(id=-1, code="unauthorized", message="a token is required")
    assert decode_hello_reply(encode_hello(refused)) == refused


def test_an_invalid_hello_reply() -> None:
    with pytest.raises(InvalidRequest) as info:
        decode_hello_reply(b'{"msg": "hello", "protocol": 1}')
    assert (
        info.value.message == "unknown message 'hello' at $.msg; expected one of hello_reply, error"
    )
    assert info.value.request_id == -1
    with pytest.raises(MalformedFrame):
        decode_hello_reply(b"\x80")


def test_invalid_request_defaults() -> None:
    err = InvalidRequest("bad")
    assert (err.request_id, err.path, err.message, err.code) == (-1, None, "bad", "invalid")
