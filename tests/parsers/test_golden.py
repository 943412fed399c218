"""Golden files: every input under tests/golden/<grammar>/ parses to the snapshot beside it.

Inputs are detected without --format and must pick the folder's grammar. The files of a conversation
over several files (a Telegram chat's pages) are also parsed together, as ingest groups them, to
``<key>.group.expected.json`` beside them. Regenerate a snapshot after an intended change with
RECONSTRUCT_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import orjson
import pytest

from parsers import registry
from tests.helpers import GOLDEN, UPDATE_GOLDEN, conversation_groups, dump, load_source, parse_file, parse_group

COMPANIONS = {n for g in registry.all_grammars() for n in g.companion_names}
CASES = sorted(
    p for p in GOLDEN.glob("*/**/*")
    if p.is_file() and not p.name.endswith(".expected.json") and p.name not in COMPANIONS
)

GROUPS = sorted(conversation_groups(GOLDEN).items())


def _grammar_dir(path):
    return GOLDEN / path.relative_to(GOLDEN).parts[0]


def _companions(path):
    """Companion files (Slack's users.json) from the case's folder up to its grammar folder."""
    found = {}
    folder = path.parent
    while True:
        for name in COMPANIONS:
            if name not in found and (folder / name).is_file():
                found[name] = (folder / name).read_text(encoding="utf-8")
        if folder == _grammar_dir(path):
            return found
        folder = folder.parent


def test_every_grammar_has_golden_cases():
    names = {g.name for g in registry.all_grammars()}
    covered = {_grammar_dir(p).name for p in CASES}
    assert names <= covered, f"grammars without golden cases: {sorted(names - covered)}"
    assert covered <= names, f"golden folders without a grammar: {sorted(covered - names)}"


@pytest.mark.parametrize("path", CASES, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_golden(path):
    grammar = _grammar_dir(path).name
    name = str(path.relative_to(_grammar_dir(path)))
    source = load_source(path, name)
    detection = registry.detect(source.text[:65536], name, threshold=0.5)
    assert detection.grammar == grammar, detection.scores
    got = parse_file(path, grammar, name=name, companions=_companions(path))
    for session in got:
        if session["coverage_reason"] is None:  # a grammar that leaves something out must say so
            assert session["counted_turns"] == len(session["turns"]), "independent count disagrees"
        else:
            assert session["counted_turns"] >= len(session["turns"])
    expected_path = path.with_name(path.name + ".expected.json")
    if UPDATE_GOLDEN:
        expected_path.write_bytes(dump(got))
    assert expected_path.exists(), (f"{expected_path.name} is missing: write it with RECONSTRUCT_UPDATE_GOLDEN=1 "
                                    "and review it")
    assert got == orjson.loads(expected_path.read_bytes())


def group_case(key):
    """(grammar, part names, group name, expected file) of a golden conversation over several files."""
    (folder, within), paths = key, dict(GROUPS)[key]
    grammar_dir = _grammar_dir(paths[0])
    names = [str(p.relative_to(grammar_dir)) for p in paths]
    name = str((folder / within).relative_to(grammar_dir)) if within else str(folder.relative_to(grammar_dir))
    expected = folder / f"{within or folder.name}.group.expected.json"
    return grammar_dir.name, paths, names, name, expected


@pytest.mark.parametrize("key", [k for k, _ in GROUPS], ids=lambda k: str((k[0] / k[1]).relative_to(GOLDEN)))
def test_golden_group(key):
    grammar, paths, names, name, expected_path = group_case(key)
    got = parse_group(paths, grammar, names, name, _companions(paths[0]))
    for session in got:
        if session["coverage_reason"] is None:
            assert session["counted_turns"] == len(session["turns"]), "independent count disagrees"
    if UPDATE_GOLDEN:
        expected_path.write_bytes(dump(got))
    assert expected_path.exists(), f"{expected_path.name} is missing: write it with RECONSTRUCT_UPDATE_GOLDEN=1"
    assert got == orjson.loads(expected_path.read_bytes())


def test_a_case_without_its_expected_file_fails_and_writes_nothing(tmp_path, monkeypatch):
    import shutil

    import tests.parsers.test_golden as this

    case = next(p for p in CASES if _grammar_dir(p).name == "transcript")
    copy = tmp_path / "transcript" / case.name
    copy.parent.mkdir()
    shutil.copy(case, copy)
    monkeypatch.setattr(this, "GOLDEN", tmp_path)
    monkeypatch.setattr(this, "UPDATE_GOLDEN", False)
    with pytest.raises(AssertionError, match="is missing"):
        this.test_golden(copy)
    assert not copy.with_name(copy.name + ".expected.json").exists()
