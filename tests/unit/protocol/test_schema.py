"""The JSON Schema of the wire messages (protocol/schema.py), checked with jsonschema."""

from __future__ import annotations

import copy
import functools
import json
from typing import Any, get_args

import jsonschema
import pytest
from protocol_schema import entry_point, message_examples, schema_validator

from podium.protocol import wire as w
from podium.protocol.errors import InvalidRequest
from podium.protocol.framing import Codec, decode_hello, encode_hello
from podium.protocol.schema import ENTRY_POINTS, QUANTITY_PATTERN, SCHEMA_ID, protocol_schema

EXAMPLES = message_examples()
JSON = Codec("json")


def _json(msg: Any) -> Any:
    payload = encode_hello(msg) if isinstance(msg, w.Hello | w.HelloReply) else JSON.encode(msg)
    return json.loads(payload)


@functools.cache
def _document_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(protocol_schema())


def _id(msg: Any) -> str:
    return f"{type(msg).__name__}-{EXAMPLES.index(msg)}"


def test_the_document_is_a_valid_draft_2020_12_schema() -> None:
    schema = protocol_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == SCHEMA_ID
    assert schema["title"] == "Podium wire protocol, version 1"
    assert "docs/protocol.md" in schema["description"]
    assert schema["oneOf"] == [{"$ref": f"#/$defs/{name}"} for name in ENTRY_POINTS]
    assert set(ENTRY_POINTS) <= set(schema["$defs"])


def test_the_document_is_plain_json_and_fresh_each_call() -> None:
    schema = protocol_schema()
    assert json.loads(json.dumps(schema)) == schema
    schema["$defs"].clear()
    assert protocol_schema()["$defs"]


@pytest.mark.parametrize(
    ("entry", "union"), [("ClientMessage", w.ClientMessage), ("ServerMessage", w.ServerMessage)]
)
def test_message_unions_are_one_of_their_structs_by_msg(entry: str, union: Any) -> None:
    definition = protocol_schema()["$defs"][entry]
    classes = get_args(union)
    assert definition["oneOf"] == [{"$ref": f"#/$defs/{cls.__name__}"} for cls in classes]
    assert definition["discriminator"] == {
        "propertyName": "msg",
        "mapping": {cls.__struct_config__.tag: f"#/$defs/{cls.__name__}" for cls in classes},
    }


def test_quantities_are_strings_of_the_grammar_or_numbers() -> None:
    defs = protocol_schema()["$defs"]
    assert defs["Quantity"]["anyOf"] == [
        {"type": "string", "pattern": QUANTITY_PATTERN},
        {"type": "number", "minimum": 0},
    ]
    requests = defs["ResourceRequirements"]["properties"]["requests"]
    assert requests["additionalProperties"] == {"$ref": "#/$defs/Quantity"}


@pytest.mark.parametrize("msg", EXAMPLES, ids=_id)
def test_every_example_validates_against_its_entry_point_and_the_whole_document(msg: Any) -> None:
    instance = _json(msg)
    schema_validator(entry_point(msg)).validate(instance)
    _document_validator().validate(instance)


@pytest.mark.parametrize("entry", ["ClientMessage", "ServerMessage", "Hello", "HelloReply"])
def test_an_entry_point_rejects_the_other_entry_points_messages(entry: str) -> None:
    validator = schema_validator(entry)
    for msg in EXAMPLES:
        if entry_point(msg) != entry:
            assert not validator.is_valid(_json(msg)), (entry, type(msg).__name__)


def test_schema_validator_refuses_an_unknown_entry() -> None:
    with pytest.raises(ValueError, match="unknown schema entry 'Pod'"):
        schema_validator("Pod")


# --------------------------------------------------------------------------- invalid messages


def _put(**container: Any) -> dict[str, Any]:
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container]}}
    return {"msg": "put", "id": 1, "objects": [pod]}


INVALID_REQUESTS = {
    "unknown msg": {"msg": "nope", "id": 1},
    "missing msg": {"id": 1, "kind": "Pod"},
    "missing id": {"msg": "stats"},
    "negative id": {"msg": "stats", "id": -1},
    "string id": {"msg": "stats", "id": "1"},
    "missing kind": {"msg": "get", "id": 1},
    "empty put": {"msg": "put", "id": 1, "objects": []},
    "unknown kind": {
        "msg": "put",
        "id": 1,
        "objects": [{"kind": "Job", "metadata": {"name": "j"}}],
    },
    "object without a name": {"msg": "put", "id": 1, "objects": [{"kind": "Node", "metadata": {}}]},
    "bad quantity": _put(resources={"requests": {"cpu": "1x"}}),
    "negative quantity": _put(resources={"requests": {"cpu": "-1"}}),
    "negative number quantity": _put(resources={"requests": {"cpu": -1}}),
    "quantity of the wrong type": _put(resources={"requests": {"cpu": True}}),
    "wrong nested type": _put(ports=[{"containerPort": "80"}]),
    "unknown field in a ref": {
        "msg": "delete",
        "id": 1,
        "refs": [{"kind": "Pod", "name": "a", "x": 1}],
    },
    "empty ref name": {"msg": "delete", "id": 1, "refs": [{"kind": "Pod", "name": ""}]},
    "simulate a node": {
        "msg": "simulate",
        "id": 1,
        "pod": {"kind": "Node", "metadata": {"name": "n"}},
    },
    "negative revision": {"msg": "watch", "id": 1, "from_revision": -3},
}


@pytest.mark.parametrize("name", INVALID_REQUESTS)
def test_invalid_requests_fail_both_the_schema_and_the_decoder(name: str) -> None:
    instance = INVALID_REQUESTS[name]
    assert not schema_validator("ClientMessage").is_valid(instance)
    with pytest.raises(InvalidRequest):
        JSON.decode_request(json.dumps(instance).encode())


INVALID_HELLOS = {
    "unknown encoding": {"msg": "hello", "protocol": 1, "encoding": "cbor"},
    "unknown field": {"msg": "hello", "protocol": 1, "tokn": "t"},
    "missing protocol": {"msg": "hello"},
    "another message": {"msg": "stats", "id": 1},
}


@pytest.mark.parametrize("name", INVALID_HELLOS)
def test_invalid_hellos_fail_both_the_schema_and_the_decoder(name: str) -> None:
    instance = INVALID_HELLOS[name]
    assert not schema_validator("Hello").is_valid(instance)
    with pytest.raises(InvalidRequest):
        decode_hello(json.dumps(instance).encode())


def test_invalid_replies_fail_the_schema() -> None:
    validator = schema_validator("ServerMessage")
    error = _json(w.ErrorReply(id=1, code="gone", message="m", revision=3))
    for change in ({"code": "teapot"}, {"id": -2}, {"message": None}, {"msg": "err"}):
        assert not validator.is_valid({**error, **change}), change
    event = _json(next(m for m in EXAMPLES if isinstance(m, w.Event)))
    assert not validator.is_valid({**event, "type": "Scheduled"})
    hello_reply = _json(w.HelloReply(protocol=1, server_version="v", revision=0))
    assert not schema_validator("HelloReply").is_valid({**hello_reply, "revision": -1})


def test_accepted_quantity_spellings_match_the_pattern() -> None:
    validator = schema_validator("ClientMessage")
    for text in ("0", "100m", "1.5", "1.", ".5", "+1", "1Ki", "5.5Mi", "2e3", "1E3", "1e-3", "8Ei"):
        instance = _put(resources={"requests": {"cpu": text}})
        assert validator.is_valid(instance), text
        JSON.decode_request(json.dumps(instance).encode())
    for text in ("", "1x", "1 m", "Ki", ".", "1e", "1.5.5", "1KI", "-1"):
        assert not validator.is_valid(_put(resources={"requests": {"cpu": text}})), text


def test_kubernetes_objects_allow_fields_podium_ignores() -> None:
    # Unknown object fields (status.podIP, ...) are ignored by the decoder; the schema agrees.
    put = _json(next(m for m in EXAMPLES if isinstance(m, w.Put)))
    changed = copy.deepcopy(put)
    changed["objects"][1].setdefault("status", {})["podIP"] = "10.0.0.1"
    changed["objects"][1]["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}]
    assert schema_validator("ClientMessage").is_valid(changed)
    JSON.decode_request(json.dumps(changed).encode())
