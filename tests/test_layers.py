"""The packages import one way: flows -> audit -> validators -> normalizers -> parsers -> models."""

from __future__ import annotations

import ast

import pytest

from tests.helpers import ROOT

LAYERS = ["models", "parsers", "normalizers", "validators", "audit", "flows"]


def _imports(path) -> set[str]:
    """Top-level names of every module the file imports (absolute imports only)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", LAYERS)
def test_a_package_imports_only_the_layers_below_it(package):
    above = set(LAYERS[LAYERS.index(package) + 1:])
    for path in sorted((ROOT / package).rglob("*.py")):
        wrong = _imports(path) & above
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


def test_only_flows_imports_prefect():
    for package in LAYERS[:-1]:
        for path in sorted((ROOT / package).rglob("*.py")):
            assert not {"prefect", "prefect_dask"} & _imports(path), path.relative_to(ROOT)


def _flows_imports(path) -> set[str]:
    """The flows modules a file imports, as dotted names (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(x for x in (base, node.module or "") if x) if node.level else node.module or ""
            if module.split(".")[0] == "flows":
                found |= {f"{module}.{a.name}" for a in node.names} if module in ("flows", "flows.core") else {module}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "flows"}
    return found


CORE_MAY_ASK = {"flows.faults"}
"""What the core may import from outside it: the classification of environment faults (a full or read-only
output stops a shard: ``faults.stops_writes``), which imports Prefect only inside the functions the CLI calls."""


def test_the_core_run_has_no_prefect_and_nothing_of_the_orchestration_or_the_cli():
    """flows/core is the run a worker does (a Prefect task, a Dask task or the bench): it imports no Prefect,
    and nothing of flows/ outside it but ``CORE_MAY_ASK``; the orchestration and the command line use it."""
    files = sorted((ROOT / "flows" / "core").glob("*.py"))
    assert len(files) > 10
    for path in files:
        assert not {"prefect", "prefect_dask", "dask", "typer"} & _imports(path), path.relative_to(ROOT)
        outside = {m for m in _flows_imports(path) if not m.startswith("flows.core")} - CORE_MAY_ASK
        assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_the_orchestration_never_imports_the_cli():
    for path in sorted((ROOT / "flows").glob("*.py")):
        assert not {m for m in _flows_imports(path) if m.startswith("flows.cli")}, path.relative_to(ROOT)
