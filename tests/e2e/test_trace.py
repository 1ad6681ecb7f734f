"""One pod followed through a trace: the console exporter prints every span of its attempt.

A real ``podium serve`` with ``podium.tracing: {console: true, sampleRatio: 1}``; the spans
go to stderr, one line each (actors/runtime/tracing.py ``format_span``).
"""

from __future__ import annotations

import re
from pathlib import Path

import trio
from builders import make_node, make_pod
from daemon import StartDaemon

from podium.protocol.client import connect

SPANS = ("queue_wait", "filter", "score", "select", "assume", "bind", "commit")


async def _bind_one_pod(address: str) -> None:
    with trio.fail_after(30):
        async with connect(address) as client, client.watch(kinds=["Pod"]) as events:
            nodes = [
                make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).obj() for i in (1, 2)
            ]
            await client.put(nodes)
            await client.put([make_pod("traced").req(cpu="1").obj()])
            async for ev in events:
                if ev.type == "Bound":
                    return


def test_console_trace_of_one_pod_shows_every_span(
    tmp_path: Path, start_daemon: StartDaemon
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "podium:\n"
        "  listen: 127.0.0.1:0\n"
        "  metrics: null\n"
        "  tracing:\n"
        "    console: true\n"
        "    sampleRatio: 1\n"
    )
    daemon = start_daemon("--config", str(config), bare=True)
    trio.run(_bind_one_pod, daemon.address)
    code, text = daemon.stop()
    assert code == 0, text
    attempt = re.search(
        r"span scheduling_attempt trace=(\S+) id=(\S+) .*podium.pod=default/traced.*", text
    )
    assert attempt, text
    trace_id, span_id = attempt.group(1), attempt.group(2)
    assert "podium.result=scheduled" in attempt.group(0)
    assert "links=" in attempt.group(0)  # the Put that submitted the pod
    for name in SPANS:
        child = re.search(
            rf"span {name} trace={re.escape(trace_id)} id=\S+ parent={re.escape(span_id)} ", text
        )
        assert child, f"no {name} span under the attempt:\n{text}"
    assert re.search(r"span Put trace=\S+ id=\S+ parent=- ", text), text
