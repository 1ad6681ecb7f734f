"""The command line starts at once (issue 26 point 5): ``podium --version``, ``get``,
``apply``, ``watch`` and ``stats`` import neither numpy, the actors, the daemon, the store,
the benchmarks nor OpenTelemetry; their parsers are built without the client.

Each case runs in a fresh interpreter (``sys.modules`` of this one holds everything already):
the command runs against an address nothing listens on, so it fails to connect after having
imported all it needs to talk to a daemon, and the modules it imported are printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from operator import attrgetter

import pytest
from repo_paths import FIXTURES

from podium.cli import main as cli_main
from podium.cli import objects
from podium.cli.benchmarks import WORKLOAD_NAMES
from podium.cli.common import remote
from podium.cli.main import GROUP_OF_COMMAND, build_parser

NOWHERE = "127.0.0.1:1"  # nothing listens on port 1: connection refused at once

# Never needed by a command that talks to a daemon, nor by --version.
HEAVY = (
    "numpy",
    "podium.actors",
    "podium.cli.bench",
    "podium.store",
    "opentelemetry",
    "aiosqlite",
    "prometheus_client",
    "httpx",
)
# Not needed to print the version either.
CLIENT = ("trio", "msgspec", "yaml", "podium.protocol.client", "podium.protocol.objects")

_PROBE = """
import json, sys
from podium.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    code: int
    forbidden: tuple[str, ...]


CASES = [
    Case("version", ("--version",), 0, HEAVY + CLIENT),
    Case("get pods", ("get", "pods", "--server", NOWHERE), 1, HEAVY),
    Case("get pods -o yaml", ("get", "pods", "-o", "yaml", "--server", NOWHERE), 1, HEAVY),
    Case(
        "apply",
        ("apply", "-f", str(FIXTURES / "kubectl-get-multi.yaml"), "--server", NOWHERE),
        1,
        HEAVY,
    ),
    Case("watch", ("watch", "--server", NOWHERE), 1, HEAVY),
    Case("stats", ("stats", "--server", NOWHERE), 1, HEAVY),
    Case("delete", ("delete", "pod", "web-1", "--server", NOWHERE), 1, HEAVY),
]


def _modules(argv: tuple[str, ...]) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    return report["code"], report["modules"]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_a_command_imports_only_what_it_needs(case: Case) -> None:
    code, modules = _modules(case.argv)
    assert code == case.code
    heavy = [m for m in modules if m.startswith(case.forbidden)]
    assert heavy == []
    assert "podium.cli.main" in modules  # (the probe did run the command line)


def test_the_probe_sees_heavy_imports_where_there_are_some() -> None:
    # simulate runs the actors in process: the same probe must catch them.
    argv = ("simulate", "-f", str(FIXTURES / "kubectl-get-multi.yaml"), "-o", "json")
    code, modules = _modules(argv)
    assert code == 0
    assert "numpy" in modules
    assert "podium.actors.supervisor.supervisor" in modules


# --------------------------------------------------------------------------- written out


def test_each_command_is_registered_by_the_group_the_table_names() -> None:
    for group in dict.fromkeys(GROUP_OF_COMMAND.values()):
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(f"podium.cli.{group}").register(sub)
        assert sorted(sub.choices) == sorted(c for c, g in GROUP_OF_COMMAND.items() if g == group)


def test_every_command_is_in_the_full_parser_in_help_order() -> None:
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert list(sub.choices) == list(GROUP_OF_COMMAND)  # type: ignore[attr-defined]


def test_constants_written_out_for_the_parsers_match_their_sources() -> None:
    from podium.cli.bench.workload import WORKLOADS
    from podium.protocol.client import DEFAULT_CHUNK_SIZE, DEFAULT_SERVER

    assert remote.DEFAULT_SERVER == DEFAULT_SERVER
    assert objects.DEFAULT_CHUNK_SIZE == DEFAULT_CHUNK_SIZE
    assert tuple(WORKLOADS) == WORKLOAD_NAMES


@pytest.mark.parametrize(
    ("argv", "commands"),
    [
        (["get", "pods", "-o", "wide"], ["get"]),
        (["apply", "-h"], ["apply"]),
        (["-h", "apply"], None),  # podium's own help
        (["--version"], []),
        (["--help"], None),
        ([], None),
        (["gett", "pods"], None),  # a typo: argparse lists every command
    ],
)
def test_the_parser_built_is_the_one_the_arguments_need(
    argv: list[str], commands: list[str] | None
) -> None:
    assert cli_main._commands_named(argv) == commands
