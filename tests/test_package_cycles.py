"""No import cycle between packages (docs/architecture.md, rule 9).

import-linter's ``acyclic_siblings`` contract looks at the modules of a package and at sibling
packages, not at a package and its own subpackages: ``store/election.py`` importing
``store/etcd/`` while ``store/etcd/`` imports ``store/actor.py`` passed it. This test builds the
graph of podium's packages from the source with :mod:`ast` (a package depends on another when
one of its own modules imports one of the other's) and requires it to have no cycle. Imports
under ``if TYPE_CHECKING:`` are left out; imports inside functions count (they hide a cycle
from the interpreter, they do not remove it).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def source_roots(root: Path) -> dict[str, Path]:
    """Each top-level package (``podium.actors``, ...) with its folder, from pyproject.toml."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    return {name: root / folder for name, folder in setuptools["package-dir"].items()}


def modules(roots: dict[str, Path]) -> dict[str, Path]:
    """Every module's dotted name (a package by its ``__init__.py``) and its file."""
    found = {}
    for package, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join((package, *parts)).removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the module ``name`` (at ``path``) imports."""
    tree = ast.parse(path.read_text(), str(path))
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    dotted = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            dotted.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            dotted.add(base)
            dotted.update(f"{base}.{alias.name}" for alias in node.names)
    found = set()
    for module in dotted:
        while module and module not in known:
            module = module.rpartition(".")[0]
        if module:
            found.add(module)
    return found


def package_graph(roots: dict[str, Path]) -> dict[str, set[str]]:
    """Each package and the other packages its own modules import from."""
    known = modules(roots)

    def package_of(module: str) -> str:
        return module if known[module].name == "__init__.py" else module.rpartition(".")[0]

    graph: dict[str, set[str]] = {package_of(module): set() for module in known}
    for module, path in known.items():
        graph[package_of(module)].update(
            package_of(other) for other in imports(module, path, known)
        )
        graph[package_of(module)].discard(package_of(module))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of packages that reach one another (each group sorted), sorted."""
    reach = {}
    for start in graph:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for following in graph.get(todo.pop(), ()):
                if following not in seen:
                    seen.add(following)
                    todo.append(following)
        reach[start] = seen
    groups = {
        frozenset(other for other in reach[package] if package in reach[other])
        for package in graph
        if package in reach[package]
    }
    return sorted(sorted(group) for group in groups)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_check_finds_a_package_that_imports_its_subpackage_and_back(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import c\n",  # a cycle of modules inside pkg: not this check's
            "pkg/c.py": "from pkg import a, other\n",
            "pkg/other/__init__.py": "import typing\nif typing.TYPE_CHECKING:\n    import pkg.a\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/b.py": "def f():\n    from ..a import f\n",  # inside a function: counts
        },
    )
    roots = {"pkg": tmp_path / "pkg"}
    # pkg -> pkg.other, whose import of pkg is for types only; pkg.sub -> pkg, not back.
    assert package_graph(roots) == {"pkg": {"pkg.other"}, "pkg.other": set(), "pkg.sub": {"pkg"}}
    assert cycles(package_graph(roots)) == []
    write(tmp_path, {"pkg/c.py": "from pkg import a, other\nimport pkg.sub.b\n"})
    assert cycles(package_graph(roots)) == [["pkg", "pkg.sub"]]


def test_no_package_imports_a_package_that_imports_it_back() -> None:
    graph = package_graph(source_roots(ROOT))
    assert {"podium.actors.cycle", "podium.store.etcd", "podium.cli.bench"} <= graph.keys()
    assert not cycles(graph), "package cycles (move what both sides share below them):\n" + (
        "\n".join(" <-> ".join(group) for group in cycles(graph))
    )
