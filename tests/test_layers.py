"""The architecture's import rules (docs/architecture.md "Layers"), as import-linter contracts.

The contracts live in pyproject.toml ``[tool.importlinter]``: protocol < store < actors < cli;
inside actors, by part: runtime and framework < plugins < mail < queue, cache < cycle < binder <
supervisor < gateway, simulation < daemon; no actor imports another; the client speaks only the
protocol; the runtime helpers sit below everything that uses them; framework, plugins and the
sans-IO cores import no trio, httpx, sqlite or store durability; protocol/ (but its client) is
sans-IO; the gateway asks the store by mail only (no store internals); no import cycles between
the modules of a package or between sibling packages.

``lint-imports`` runs on the tree itself (so the README's one test command checks the rules),
and on a copy of the tree with one forbidden import injected at a time, which must break the
contract that forbids it: a contract that passes everything would otherwise go unnoticed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("actors", "cli", "protocol", "store")  # podium.<name> lives in <name>/ (pyproject)


def _lint_imports() -> str:
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    assert tool, "lint-imports is not installed (pip install -e '.[test]')"
    return tool


def test_import_linter_contracts_are_kept() -> None:
    proc = subprocess.run(
        [_lint_imports(), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout and " 0 broken" in proc.stdout, proc.stdout


IMPORTLINTER = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
CONTRACTS = {contract["name"] for contract in IMPORTLINTER["contracts"]}
CLIENT = "the client speaks only the protocol"
SANS_IO = (
    "framework, plugins and the sans-IO cores import no trio, httpx, sqlite or store durability"
)
RUNTIME = "the runtime helpers (mailbox, tracing) sit below everything that uses them"
ACTORS = "no actor imports another: the actors share only messages"
VOCABULARY = (
    "the vocabulary is sans-IO: protocol/ (but its client) imports no trio, httpx or sqlite"
)


@dataclass(frozen=True)
class Injection:
    """A row: ``module`` (a file under the copy's ``podium/``) gets ``import <imported>``
    appended, and ``lint-imports`` must then find ``contract`` broken, naming that import."""

    name: str
    module: str
    imported: str
    contract: str


INJECTIONS = [
    Injection(
        "the client imports the store", "protocol/client/transport.py", "podium.store", CLIENT
    ),
    Injection(
        "the client imports the actors", "protocol/client/errors.py", "podium.actors", CLIENT
    ),
    # Each of framework, plugins (a nested module too) and the four sans-IO cores, and each
    # forbidden import, at least once.
    Injection("a plugin imports trio", "actors/plugins/node_unschedulable.py", "trio", SANS_IO),
    Injection(
        "a nested plugin module imports the etcd store",
        "actors/plugins/inter_pod_affinity/filtering.py",
        "podium.store.etcd",
        SANS_IO,
    ),
    Injection("a framework module imports httpx", "actors/framework/nodeinfo.py", "httpx", SANS_IO),
    Injection("the queue core imports aiosqlite", "actors/queue/core.py", "aiosqlite", SANS_IO),
    Injection("the cache core imports sqlite3", "actors/cache/core.py", "sqlite3", SANS_IO),
    Injection(
        "the generic scheduler imports the SQLite store",
        "actors/cycle/generic_scheduler.py",
        "podium.store.sqlite",
        SANS_IO,
    ),
    Injection("preemption imports trio", "actors/framework/preemption.py", "trio", SANS_IO),
    # A core that imports an actor imports trio through it (no cycle or layer catches these).
    Injection(
        "the cache core imports its actor",
        "actors/cache/core.py",
        "podium.actors.cache.actor",
        SANS_IO,
    ),
    Injection(
        "the simulated cluster imports the queue actor",
        "actors/simulation/cluster.py",
        "podium.actors.queue.actor",
        SANS_IO,
    ),
    Injection(
        "the runtime imports the store", "actors/runtime/mailbox.py", "podium.store", RUNTIME
    ),
    Injection(
        "the runtime imports an actor part",
        "actors/runtime/tracing.py",
        "podium.actors.queue.actor",
        RUNTIME,
    ),
    Injection(
        "the queue actor imports the cache actor",
        "actors/queue/actor.py",
        "podium.actors.cache.actor",
        ACTORS,
    ),
    Injection("the vocabulary imports trio", "protocol/wire.py", "trio", VOCABULARY),
    Injection(
        "the vocabulary imports its client",
        "protocol/errors.py",
        "podium.protocol.client",
        VOCABULARY,
    ),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the source (``podium/<package>``) and pyproject.toml that tests may edit."""
    root = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, root / "podium" / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def broken_contracts(tree: Path) -> tuple[set[str], str]:
    """The names of the contracts ``lint-imports`` finds broken in ``tree``, and its report.

    The report wraps long names at the terminal's width, at times with no space before
    ``BROKEN``: names are compared with all whitespace removed."""
    proc = subprocess.run(
        [_lint_imports(), "--no-cache"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    report = "".join(proc.stdout.split())
    broken = {name for name in CONTRACTS if "".join(name.split()) + "BROKEN" in report}
    assert (proc.returncode != 0) == bool(broken), proc.stdout + proc.stderr
    return broken, proc.stdout


@pytest.mark.parametrize("case", INJECTIONS, ids=attrgetter("name"))
def test_each_forbidden_import_breaks_its_contract(tree: Path, case: Injection) -> None:
    assert case.contract in CONTRACTS, f"no contract named {case.contract!r} in pyproject.toml"
    path = tree / "podium" / case.module
    source = path.read_text()
    path.write_text(f"{source}\nimport {case.imported}  # injected by tests/test_layers.py\n")
    try:
        broken, report = broken_contracts(tree)
    finally:
        path.write_text(source)
    assert case.contract in broken, f"{case.contract!r} kept; broken: {sorted(broken)}\n{report}"
    importer = "podium." + case.module.removesuffix(".py").replace("/", ".")
    assert f"{importer}->{case.imported}(l." in "".join(report.split()), report


def test_the_copy_alone_breaks_no_contract(tree: Path) -> None:
    """The injections are what break the copy: untouched, it keeps every contract."""
    broken, report = broken_contracts(tree)
    assert not broken, report


def test_the_vocabulary_contract_names_every_protocol_module_but_the_client() -> None:
    """import-linter cannot exclude a subpackage from a source package, so the sans-IO contract
    lists protocol/'s modules one by one: a new module must join the list."""
    (contract,) = (c for c in IMPORTLINTER["contracts"] if c["name"] == VOCABULARY)
    modules = {f"podium.protocol.{path.stem}" for path in (ROOT / "protocol").glob("*.py")}
    assert set(contract["source_modules"]) == modules - {"podium.protocol.__init__"}
