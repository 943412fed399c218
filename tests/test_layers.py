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
