"""The house's own rules, kept by tests.

- No test module imports another test module. What several test modules share lives in
  tests/support/ (on pytest's path, so ``from builders import make_pod``) and the fixtures in
  tests/conftest.py; a test module that imported another's helpers would run the other's
  module-level code, tie the two together and hide what is shared.
- tests/unit mirrors the source tree: a unit test lives in the folder of the part it tests
  (tests/unit/actors/queue/test_core.py for actors/queue/core.py), so each of its folders is a
  source package.
- Every package the wheel ships carries ``py.typed`` (PEP 561), so a type checker reads the
  types of an installed Podium (the client's users) instead of treating it as untyped.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def names_of_test_modules() -> frozenset[str]:
    """The name of every test module (``test_serve``, ...)."""
    return frozenset(path.stem for path in TESTS.rglob("test_*.py"))


def imports_of_test_modules(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, dotted name) of each import in ``source`` that reaches one of the modules
    ``names``: ``import test_x``, ``from e2e.test_x import y``, ``from e2e import test_x``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            dotted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            dotted = [f"{base}.{alias.name}".lstrip(".") for alias in node.names]
        else:
            continue
        for name in dotted:
            if names.intersection(name.split(".")):
                found.append((node.lineno, name))
    return found


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    want: list[tuple[int, str]]


CASES = [
    Case("a helper from tests/support", "from builders import make_pod", []),
    Case("podium itself", "from podium.cli.bench.process import ServeProcess", []),
    Case(
        "a private helper of another e2e module",
        "from e2e.test_serve import start_daemon",
        [(1, "e2e.test_serve.start_daemon")],
    ),
    Case("a test module as a whole", "import test_lint", [(1, "test_lint")]),
    Case(
        "a test module from its package",
        "import os\nfrom property import test_fuzz_frames",
        [(2, "property.test_fuzz_frames")],
    ),
    Case("relative", "from .test_serve import PODIUM", [(1, "test_serve.PODIUM")]),
    Case("a function named like a test", "from unittest import test_nothing", []),
]


@pytest.mark.parametrize("case", CASES, ids=attrgetter("name"))
def test_the_check_finds_imports_of_test_modules(case: Case) -> None:
    names = frozenset({"test_serve", "test_lint", "test_fuzz_frames"})
    assert imports_of_test_modules(case.source, names) == case.want


def test_no_test_module_conftest_or_support_module_imports_a_test_module() -> None:
    names = names_of_test_modules()
    assert {"test_serve", "test_house"} <= names
    files = [*TESTS.rglob("test_*.py"), *TESTS.rglob("conftest.py"), *TESTS.glob("support/*.py")]
    offences = [
        f"{path.relative_to(TESTS)}:{line}: imports {name}"
        for path in sorted(files)
        for line, name in imports_of_test_modules(path.read_text(), names)
    ]
    assert not offences, "move what they share into tests/support/:\n" + "\n".join(offences)


def folders_not_in_the_source(root: Path, unit: Path) -> list[str]:
    """Each file under ``unit`` whose folder is not the matching source package under ``root``
    (a folder with ``__init__.py``); a file directly in ``unit`` belongs to no part."""
    return [
        str(path.relative_to(unit))
        for path in sorted(unit.rglob("*"))
        if path.is_file()
        and "__pycache__" not in path.parts
        and not (
            path.parent != unit and (root / path.parent.relative_to(unit) / "__init__.py").is_file()
        )
    ]


def test_the_mirror_check_names_misplaced_files(tmp_path: Path) -> None:
    (tmp_path / "actors" / "queue").mkdir(parents=True)
    (tmp_path / "actors" / "queue" / "__init__.py").touch()
    (tmp_path / "actors" / "core").mkdir()  # a folder, but not a package
    unit = tmp_path / "tests" / "unit"
    for rel in ("actors/queue/test_core.py", "actors/core/test_x.py", "test_loose.py", "gone/t.py"):
        (unit / rel).parent.mkdir(parents=True, exist_ok=True)
        (unit / rel).touch()
    assert folders_not_in_the_source(tmp_path, unit) == [
        "actors/core/test_x.py",
        "gone/t.py",
        "test_loose.py",
    ]


def test_tests_unit_mirrors_the_source_tree() -> None:
    misplaced = folders_not_in_the_source(ROOT, TESTS / "unit")
    assert not misplaced, (
        "move each into tests/unit/<the folder of the source it tests>:\n" + "\n".join(misplaced)
    )


def package_folders() -> dict[str, Path]:
    """Every package pyproject.toml ships, with its folder (through ``package-dir``)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = setuptools["package-dir"]
    folders = {}
    for package in setuptools["packages"]:
        root = max((name for name in roots if f"{package}.".startswith(f"{name}.")), key=len)
        folders[package] = ROOT / roots[root] / Path(*package[len(root) :].split(".")[1:])
    return folders


def test_every_shipped_package_carries_py_typed() -> None:
    folders = package_folders()
    assert folders["podium.actors.queue"] == ROOT / "actors" / "queue"
    assert folders["podium.protocol"] == ROOT / "protocol"
    missing = [
        name for name, folder in sorted(folders.items()) if not (folder / "py.typed").is_file()
    ]
    assert not missing, f"add py.typed to: {missing}"
