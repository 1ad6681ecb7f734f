"""Where a test finds the repository's own files, wherever the test module sits.

tests/unit mirrors the source tree, so a test's depth below the repository changes when the
source moves; ``Path(__file__).parents[n]`` would then point elsewhere. These constants do not.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DOCS", "EXAMPLES", "FIXTURES", "ROOT"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository's top level (pyproject.toml, README.md, the source packages)."""

DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests" / "fixtures"
