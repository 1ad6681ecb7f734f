"""ruff and mypy (strict) are part of the suite, so the README's one test command checks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(
    os.environ.get("PODIUM_SKIP_LINT") == "1", reason="lint runs once, on the first interpreter"
)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed (pip install -e '.[test]')"
    return found


def test_ruff_check() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = subprocess.run(
        [_tool("ruff"), "format", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict(tmp_path: Path) -> None:
    """mypy strict over podium.actors/cli/protocol/store, through a ``podium/`` folder of symlinks
    (mypy cannot follow setuptools' default editable hook, STYLE.md)."""
    root = tmp_path / "podium"
    root.mkdir()
    for folder in ("actors", "cli", "protocol", "store"):
        (root / folder).symlink_to(ROOT / folder)
    args = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache")]
    packages = [
        "-p",
        "podium.actors",
        "-p",
        "podium.cli",
        "-p",
        "podium.protocol",
        "-p",
        "podium.store",
    ]
    proc = subprocess.run(
        [_tool("mypy"), *args, *packages],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_package_is_listed_for_the_wheel() -> None:
    """A nested package missing from [tool.setuptools] packages works editable and breaks a wheel."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    dirs = config["tool"]["setuptools"]["package-dir"]
    found = set()
    for pkg, folder in dirs.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([pkg, *rel.parts]) if rel.parts else pkg)
    assert found == listed
