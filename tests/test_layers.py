"""The architecture's import rules (docs/architecture.md "Layers"), as import-linter contracts.

The contracts live in pyproject.toml ``[tool.importlinter]``: protocol < store < actors; inside
actors, framework < plugins < core < messages < the actors (independent of each other) <
supervisor < gateway < daemon < bench < cli; the client speaks only the protocol; the gateway
asks the store by mail only (no store internals); no import cycles between the modules of a
package or between sibling packages. This test runs
``lint-imports`` so the README's one test command checks them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_linter_contracts_are_kept() -> None:
    tool = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    assert tool, "lint-imports is not installed (pip install -e '.[test]')"
    proc = subprocess.run(
        [tool, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout and " 0 broken" in proc.stdout, proc.stdout
