"""When a watch reading the log on disk may hand its next page to the connection: the hub's
rule for a commit (actors/gateway/watch.py ``Hub._room``), with the frames not yet written."""

from __future__ import annotations

import pytest

from podium.actors.gateway.watch import has_room


@pytest.mark.parametrize(
    ("waiting", "wanted", "buffer", "room"),
    [
        pytest.param(0, 1000, 4096, True, id="nothing waiting: a page is taken whole"),
        pytest.param(0, 5000, 4096, True, id="nothing waiting: even past the buffer"),
        pytest.param(3096, 1000, 4096, True, id="waiting plus the page fill the buffer"),
        pytest.param(3097, 1000, 4096, False, id="one past the buffer waits"),
        pytest.param(4096, 0, 4096, True, id="a page with nothing wanted adds nothing"),
        pytest.param(1, 8, 8, False, id="a small buffer"),
    ],
)
def test_a_page_is_handed_over_while_the_waiting_frames_stay_within_the_buffer(
    waiting: int, wanted: int, buffer: int, room: bool
) -> None:
    assert has_room(waiting, wanted, buffer) is room
