"""Access (actors/gateway/access.py): the hello's token, and what a read-only token may ask."""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pytest

from podium.actors.gateway.access import authenticate_hello, forbidden
from podium.protocol.config import READ_ONLY_REQUESTS, AccessToken
from podium.protocol.wire import ClientMessage, Delete, ErrorReply, Get, Put, ReloadPolicy, Stats

READER = AccessToken(token="r" * 32, role="read-only", name="dashboard", line=1)
WRITER = AccessToken(token="w" * 32, role="read-write", name="ci", line=2)
TOKENS = (READER, WRITER)


@dataclass(frozen=True)
class HelloCase:
    name: str
    presented: str | None
    want: AccessToken | str
    """The token, or the refusal's message."""


HELLO_CASES = [
    HelloCase("a read-write token", "w" * 32, WRITER),
    HelloCase("a read-only token", "r" * 32, READER),
    HelloCase("no token", None, "this listener requires an access token and no token was given"),
    HelloCase(
        "an unknown token",
        "x" * 32,
        "this listener requires an access token and the token is not valid",
    ),
]


@pytest.mark.parametrize("case", HELLO_CASES, ids=attrgetter("name"))
def test_the_hello_presents_a_token_or_is_refused(case: HelloCase) -> None:
    checked = authenticate_hello(TOKENS, case.presented, conn_id=1, peer="127.0.0.1:5000")
    if isinstance(case.want, AccessToken):
        assert checked is case.want
    else:
        assert checked == ErrorReply(id=-1, code="unauthorized", message=case.want, path="$.token")


@dataclass(frozen=True)
class RequestCase:
    name: str
    token: AccessToken | None
    msg: ClientMessage
    forbidden: bool


REQUEST_CASES = [
    RequestCase("no token asked for: read-write", None, Put(id=1, objects=[]), False),
    RequestCase("a read-write token may put", WRITER, Put(id=1, objects=[]), False),
    RequestCase("a read-only token may get", READER, Get(id=1, kind="Pod"), False),
    RequestCase("a read-only token may ask for stats", READER, Stats(id=1), False),
    RequestCase("a read-only token may not put", READER, Put(id=1, objects=[]), True),
    RequestCase("a read-only token may not delete", READER, Delete(id=1, refs=[]), True),
    RequestCase("a read-only token may not reload the policy", READER, ReloadPolicy(id=1), True),
]


@pytest.mark.parametrize("case", REQUEST_CASES, ids=attrgetter("name"))
def test_a_read_only_token_may_make_only_the_read_requests(case: RequestCase) -> None:
    refusal = forbidden(case.token, case.msg)
    if not case.forbidden:
        assert refusal is None
        return
    kind = type(case.msg).__struct_config__.tag
    assert refusal == ErrorReply(
        id=1,
        code="forbidden",
        message=(
            f"token 'dashboard' is read-only: {kind} is not allowed "
            f"(a read-only token may {', '.join(READ_ONLY_REQUESTS)})"
        ),
    )
