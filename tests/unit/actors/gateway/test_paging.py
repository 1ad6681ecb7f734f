"""Continue tokens (actors/gateway/paging.py): a page's token leads to the next page of the
same list, and a token the daemon did not make for that list is refused naming why."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from operator import attrgetter

import msgspec
import pytest

from podium.actors.gateway.paging import continue_token, read_continue
from podium.protocol.wire import Get


def test_a_token_reads_back_the_revision_and_the_last_key() -> None:
    token = continue_token(42, "Pod", ("shop", "web-7"))
    assert read_continue(Get(id=1, kind="Pod", continue_=token)) == (42, ("shop", "web-7"))
    assert "=" not in token


def _raw(*fields: object) -> str:
    return base64.urlsafe_b64encode(msgspec.msgpack.encode(fields)).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class Case:
    name: str
    get: Get
    message: str


CASES = [
    Case(
        "a read by name",
        Get(id=1, kind="Pod", name="web", continue_=continue_token(1, "Pod", ("", "a"))),
        "a read by name is one object: it has no pages to continue",
    ),
    Case(
        "not base64",
        Get(id=1, kind="Pod", continue_="garbage!"),
        "not a continue token (pass the `continue` of the previous page's reply)",
    ),
    Case(
        "not a token's fields",
        Get(id=1, kind="Pod", continue_=_raw("Pod", 1)),
        "not a continue token (pass the `continue` of the previous page's reply)",
    ),
    Case(
        "another format",
        Get(id=1, kind="Pod", continue_=_raw(2, 1, "Pod", "", "a")),
        "not a continue token this daemon made",
    ),
    Case(
        "a negative revision",
        Get(id=1, kind="Pod", continue_=_raw(1, -1, "Pod", "", "a")),
        "not a continue token this daemon made",
    ),
    Case(
        "a list of another kind",
        Get(id=1, kind="Node", continue_=continue_token(1, "Pod", ("", "a"))),
        "the continue token is for a list of Pod, not of Node",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_a_token_not_made_for_the_list_is_refused(case: Case) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(case.message)}$"):
        read_continue(case.get)
