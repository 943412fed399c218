"""The docs a newcomer reads: a short README whose commands are the ones CI runs, links that resolve,
and the formats page generated from the registry (stale means failed)."""

from __future__ import annotations

import re

import pytest

from parsers import registry
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_readme_is_short():
    assert len(README.splitlines()) <= 150


def test_the_readme_test_command_is_what_ci_runs():
    command = re.search(r"run the tests.*?```bash\n(.+?)\n```", README, re.S).group(1)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in ci, "the README's test command is not a line of .ci/run"


def test_the_readme_main_command_runs_the_samples():
    command = re.search(r"```bash\n(.+?)\n```", README, re.S).group(1)
    assert command.endswith("reconstruct run sample_logs --out output") and "-e ." in command


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if "://" not in target:
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"


def test_the_formats_page_is_the_registrys():
    written = (ROOT / "docs" / "formats.md").read_text()
    assert written == registry.formats_markdown(), (
        "docs/formats.md is stale: reconstruct formats --markdown > docs/formats.md")
    for grammar in registry.all_grammars():
        assert f"| `{grammar.name}` |" in written
