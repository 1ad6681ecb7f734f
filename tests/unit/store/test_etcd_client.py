"""store/etcd_client.py against a fake etcd (httpx.MockTransport): which answers move to the
next member, which are etcd's refusals, when a lost answer is an unknown outcome, the auth
token's life, and the deadline after which etcd is unavailable."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import pytest
import trio

from podium.store.etcd_client import (
    EtcdClient,
    EtcdError,
    EtcdUnavailable,
    EtcdUnknownOutcome,
)

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
        answer = await client.call("range", "/v3/kv/range", {"key": "AA=="})
    await client.aclose()
    assert answer["succeeded"]
    assert [host for host, _, _ in etcd.seen] == ["a:1", "b:2"]
    assert client.endpoint == "http://b:2"  # it stays on the member that answered


async def test_a_refusal_is_etcds_message_and_not_retried() -> None:
    etcd = FakeEtcd({"a:1": [refuse(400, "etcdserver: too many operations in txn request")]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match="too many operations in txn"):
        await client.call("txn", "/v3/kv/txn", {})
    await client.aclose()
    assert len(etcd.seen) == 1


async def test_a_write_whose_answer_was_lost_is_an_unknown_outcome() -> None:
    etcd = FakeEtcd({"a:1": [dropped], "b:2": [ok]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdUnknownOutcome, match="dropped the connection"):
        await client.call("txn", "/v3/kv/txn", {})
    # A read-only txn is read again instead.
    etcd.members["a:1"] = [dropped]
    client._current = 0
    with trio.fail_after(5):
        assert (await client.call("read", "/v3/kv/txn", {}, read_only=True))["succeeded"]
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
        await client.call("txn", "/v3/kv/txn", {})
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
        await client.call("range", "/v3/kv/range", {})
        await client.call("range", "/v3/kv/range", {})
        etcd.members["a:1"] = [_token("t2")]  # etcd restarted: t1 is no longer valid
        await client.call("range", "/v3/kv/range", {})
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
        await client.call("range", "/v3/kv/range", {})
    await client.aclose()


async def test_a_plain_text_refusal_is_reported_as_it_reads() -> None:
    gateway = "CommonName of client sending a request against gateway will be ignored"
    etcd = FakeEtcd({"a:1": [lambda request: httpx.Response(400, text=gateway + "\n")]})
    client = etcd.client()
    with trio.fail_after(5), pytest.raises(EtcdError, match=gateway):
        await client.call("range", "/v3/kv/range", {})
    await client.aclose()
