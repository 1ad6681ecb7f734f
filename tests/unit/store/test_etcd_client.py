"""store/etcd/client.py against a fake etcd (httpx.MockTransport): which answers move to the
next member, which are etcd's refusals, when a lost answer is an unknown outcome, the auth
token's life, the deadline after which etcd is unavailable, and etcd's replies decoded into
their Structs (store/etcd/replies.py), a malformed one named by its field."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter

import httpx
import pytest
import trio
import trio.testing

from podium.store.etcd.client import (
    EtcdClient,
    EtcdError,
    EtcdRequestRefused,
    EtcdUnavailable,
    EtcdUnknownOutcome,
)
from podium.store.etcd.replies import KeyValue, TxnReply

Answer = Callable[[httpx.Request], httpx.Response]


@dataclass
class FakeEtcd:
    """Members by host: each answers its requests in turn from a list (the last repeats)."""

    members: dict[str, list[Answer]]
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        host = f"{request.url.host}:{request.url.port}"
        self.seen.append((host, request.url.path, request.headers.get("authorization")))
        answers = self.members[host]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        return answer(request)

    def client(self, **kwargs: object) -> EtcdClient:
        return EtcdClient(
            list(self.members),
            transport=httpx.MockTransport(self.handle),
            unavailable_after=0.3,
            **kwargs,  # type: ignore[arg-type]  # the tests pass EtcdClient's own keywords
        )


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"header": {"revision": "7"}, "succeeded": True})


def refuse(status: int, message: str) -> Answer:
    return lambda request: httpx.Response(status, json={"error": message, "message": message})


def down(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def dropped(request: httpx.Request) -> httpx.Response:
    raise httpx.RemoteProtocolError("server disconnected", request=request)


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(down, id="a member that cannot be reached"),
        pytest.param(refuse(503, "etcdserver: no leader"), id="a member without a leader"),
        pytest.param(refuse(500, "etcdserver: leader changed"), id="a leader change"),
        pytest.param(refuse(500, "etcdserver: request timed out"), id="a raft timeout"),
        pytest.param(dropped, id="a read whose connection dropped"),
    ],
)
async def test_the_next_member_answers(first: Answer) -> None:
    etcd = FakeEtcd({"a:1": [first], "b:2": [ok]})
    client = etcd.client()
    with trio.fail_after(5):
        answer = await client.range({"key": "AA=="})
    await client.aclose()
    assert answer.header.revision == 7
    assert [host for host, _, _ in etcd.seen] == ["a:1", "b:2"]
    assert client.endpoint == "http://b:2"  # it stays on the member that answered


async def test_a_refusal_is_etcds_message_and_not_retried() -> None:
    etcd = FakeEtcd({"a:1": [refuse(400, "etcdserver: too many operations in txn request")]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match="too many operations in txn"):
        await client.txn({})
    await client.aclose()
    assert len(etcd.seen) == 1


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("etcdserver: request is too large", "too_large"),
        ("grpc: received message larger than max (2202298 vs. 2097152)", "too_large"),
        ("etcdserver: too many operations in txn request", "too_large"),
        ("etcdserver: duplicate key given in txn request", "internal"),
    ],
)
async def test_a_refusal_of_the_request_itself_says_so_with_its_code(
    message: str, code: str
) -> None:
    etcd = FakeEtcd({"a:1": [refuse(400, message)], "b:2": [ok]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdRequestRefused) as refused:
        await client.txn({})
    await client.aclose()
    assert refused.value.code == code
    assert str(refused.value) == f"etcd http://a:1 refused txn: {message}"
    assert len(etcd.seen) == 1  # another member would refuse it too


async def test_a_write_whose_answer_was_lost_is_an_unknown_outcome() -> None:
    etcd = FakeEtcd({"a:1": [dropped], "b:2": [ok]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdUnknownOutcome, match="dropped the connection"):
        await client.txn({})
    # A read-only txn is read again instead.
    etcd.members["a:1"] = [dropped]
    client._current = 0
    with trio.fail_after(5):
        assert (await client.call("read", "/v3/kv/txn", {}, TxnReply, read_only=True)).succeeded
    await client.aclose()


async def test_no_member_serving_is_unavailable_after_the_deadline() -> None:
    etcd = FakeEtcd({"a:1": [down], "b:2": [refuse(503, "etcdserver: no leader")]})
    client = etcd.client()
    with (
        trio.fail_after(5),
        pytest.raises(
            EtcdUnavailable,
            match=r"no endpoint of http://a:1, http://b:2 served txn for 0.3 s \(last: ",
        ),
    ):
        await client.txn({})
    await client.aclose()
    assert {host for host, _, _ in etcd.seen} == {"a:1", "b:2"}


def _token(name: str) -> Answer:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v3/auth/authenticate":
            body = json.loads(request.content)
            if body != {"name": "podium", "password": "pw"}:
                return refuse(400, "etcdserver: authentication failed")(request)
            return httpx.Response(200, json={"token": name})
        if request.headers.get("authorization") != name:
            return refuse(401, "etcdserver: invalid auth token")(request)
        return ok(request)

    return answer


async def test_the_token_is_fetched_once_and_again_when_it_expires() -> None:
    etcd = FakeEtcd({"a:1": [_token("t1")]})
    client = etcd.client(user="podium", password="pw")
    with trio.fail_after(5):
        await client.range({})
        await client.range({})
        etcd.members["a:1"] = [_token("t2")]  # etcd restarted: t1 is no longer valid
        await client.range({})
    await client.aclose()
    assert etcd.seen == [
        ("a:1", "/v3/auth/authenticate", None),
        ("a:1", "/v3/kv/range", "t1"),
        ("a:1", "/v3/kv/range", "t1"),
        ("a:1", "/v3/kv/range", "t1"),
        ("a:1", "/v3/auth/authenticate", None),
        ("a:1", "/v3/kv/range", "t2"),
    ]


async def test_a_wrong_password_names_the_user() -> None:
    etcd = FakeEtcd({"a:1": [_token("t1")]})
    client = etcd.client(user="podium", password="wrong")
    with (
        trio.fail_after(5),
        pytest.raises(EtcdError, match="refused user 'podium': etcdserver: authentication failed"),
    ):
        await client.range({})
    await client.aclose()


async def test_a_plain_text_refusal_is_reported_as_it_reads() -> None:
    gateway = "CommonName of client sending a request against gateway will be ignored"
    etcd = FakeEtcd({"a:1": [lambda request: httpx.Response(400, text=gateway + "\n")]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match=gateway):
        await client.range({})
    await client.aclose()


# --------------------------------------------------------------------------- typed replies


def answer(status: int, content: bytes) -> Answer:
    return lambda request: httpx.Response(status, content=content)


async def test_a_range_is_decoded_once_with_its_base64_and_int64_strings() -> None:
    body = (
        b'{"header": {"cluster_id": "1", "revision": "42"}, "count": "2", "kvs": ['
        b'{"key": "cG9kaXVtL2E=", "value": "eyJ4IjoxfQ==", "mod_revision": "40", '
        b'"create_revision": "3", "version": "5"}, {"key": "cG9kaXVtL2I="}]}'
    )
    client = FakeEtcd({"a:1": [answer(200, body)]}).client()
    with trio.fail_after(5):
        reply = await client.range({})
    await client.aclose()
    assert reply.header.revision == 42
    assert reply.count == 2
    assert not reply.more  # absent: proto3 leaves a false out
    assert reply.kvs == [
        KeyValue(key=b"podium/a", value=b'{"x":1}', mod_revision=40, create_revision=3, version=5),
        KeyValue(key=b"podium/b"),  # no value: the empty one
    ]


async def test_a_txn_answers_in_order_and_a_failed_compare_is_the_absent_succeeded() -> None:
    body = (
        b'{"header": {"revision": "9"}, "responses": [{"response_range": {"header": '
        b'{"revision": "9"}, "kvs": [{"key": "aw==", "value": "dg=="}]}}, {"response_put": '
        b'{"header": {"revision": "9"}}}]}'
    )
    client = FakeEtcd({"a:1": [answer(200, body)]}).client()
    with trio.fail_after(5):
        reply = await client.txn({})
    await client.aclose()
    assert not reply.succeeded
    first, second = reply.responses
    assert first.response_range is not None
    assert first.response_range.kvs == [KeyValue(key=b"k", value=b"v")]
    assert (second.response_range, second.response_put is not None) == (None, True)


async def test_a_lease_grant_and_a_keepalive() -> None:
    grant = b'{"header": {"revision": "3"}, "ID": "7587869348215300874", "TTL": "15"}'
    keepalive = b'{"result": {"header": {"revision": "3"}, "ID": "7587869348215300874"}}'
    client = FakeEtcd({"a:1": [answer(200, grant), answer(200, keepalive)]}).client()
    with trio.fail_after(5):
        granted = await client.lease_grant(15)
        renewed = await client.lease_keepalive(granted.id)
    await client.aclose()
    assert (granted.id, granted.ttl) == (7587869348215300874, 15)
    assert renewed.result.ttl == 0  # absent: the lease is gone


@dataclass(frozen=True)
class Malformed:
    name: str
    content: bytes
    problem: str


MALFORMED = [
    Malformed(
        "a revision that is not a number",
        b'{"header": {"revision": "soon"}}',
        r"malformed reply: Expected `int`, got `str` - at `\$.header.revision`",
    ),
    Malformed(
        "no header",
        b'{"kvs": []}',
        r"malformed reply: Object missing required field `header`$",
    ),
    Malformed(
        "a key that is not base64",
        b'{"header": {"revision": "1"}, "kvs": [{"key": "not base64!"}]}',
        r"malformed reply: Invalid base64 encoded string - at `\$.kvs\[0\].key`",
    ),
    Malformed(
        "kvs that are not a list",
        b'{"header": {"revision": "1"}, "kvs": {"key": "aw=="}}',
        r"malformed reply: Expected `array`, got `object` - at `\$.kvs`",
    ),
    Malformed("not JSON", b"<html>bad gateway</html>", r"malformed reply: JSON is malformed"),
    Malformed("nothing", b"", r"malformed reply: Input data was truncated"),
]


@pytest.mark.parametrize("case", MALFORMED, ids=attrgetter("name"))
async def test_a_malformed_read_reply_is_an_error_naming_the_field(case: Malformed) -> None:
    etcd = FakeEtcd({"a:1": [answer(200, case.content)], "b:2": [ok]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match=case.problem) as caught:
        await client.range({})
    await client.aclose()
    assert type(caught.value) is EtcdError
    assert str(caught.value).startswith("etcd http://a:1 answered range with a malformed reply")
    assert len(etcd.seen) == 1  # not retried elsewhere: the member did answer


async def test_a_writes_malformed_reply_is_an_unknown_outcome() -> None:
    client = FakeEtcd({"a:1": [answer(200, b'{"succeeded": true}')]}).client()
    with (
        trio.fail_after(5),
        pytest.raises(
            EtcdUnknownOutcome, match=r"answered txn with a malformed reply: .* field `header`"
        ),
    ):
        await client.txn({})
    await client.aclose()


async def test_a_read_txn_answered_with_too_few_ranges_says_so() -> None:
    body = b'{"header": {"revision": "2"}, "responses": [{"response_put": {}}]}'
    client = FakeEtcd({"a:1": [answer(200, body)]}).client()
    with (
        trio.fail_after(5),
        pytest.raises(
            EtcdError,
            match=r"answered follow, a txn of 2 ranges, with 1 answers of which 1 not a range's",
        ),
    ):
        await client.read_ranges("follow", [{"key": "aw=="}, {"key": "bA=="}])
    await client.aclose()


async def test_a_refusal_without_a_message_reads_as_etcd_wrote_it() -> None:
    etcd = FakeEtcd({"a:1": [answer(400, b'{"code": 3}')]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match=r'refused range: \{"code": 3\}$'):
        await client.range({})
    await client.aclose()


async def test_an_answer_that_never_comes_ends_the_call_at_its_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Issue 25, point 2: a black hole keeps the connection open and never answers (httpx's
    # own timeouts are the transport's, which a black hole may never trip).
    async def black_hole(request: httpx.Request) -> httpx.Response:
        await trio.sleep_forever()

    client = EtcdClient(["a:1"], transport=httpx.MockTransport(black_hole), unavailable_after=3)
    with (
        trio.fail_after(60),
        pytest.raises(
            EtcdUnknownOutcome,
            match=r"^etcd http://a:1 did not answer txn within the call's deadline \(3 s\)$",
        ),
    ):
        await client.txn({})
    assert trio.current_time() == 3
    # A read is not a write: nothing may have applied, etcd is unavailable.
    with (
        trio.fail_after(60),
        pytest.raises(EtcdUnavailable, match=r"did not answer range within the call's deadline"),
    ):
        await client.range({})
    assert trio.current_time() == 6
    await client.aclose()
