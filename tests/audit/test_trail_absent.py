"""A trail notes the folders it found absent: a new session key's folder is not searched file by file."""

from __future__ import annotations

import os

import pytest

from audit.files import PathEscape
from audit.trail import ShardTrail


def test_a_folder_not_there_is_absent_and_one_there_is_not(tmp_path):
    (tmp_path / "sessions" / "irc" / "old").mkdir(parents=True)
    trail = ShardTrail(tmp_path)
    assert trail.resolve("sessions/irc/new/1.json") == tmp_path.resolve() / "sessions/irc/new/1.json"
    assert trail.absent("sessions/irc/new/1.json")
    assert trail.absent("sessions/irc/new/2.json")  # the same folder, looked at once
    trail.resolve("sessions/irc/old/1.json")
    assert not trail.absent("sessions/irc/old/1.json")
    assert not trail.absent("sessions/never/resolved/1.json")  # not looked at: not known absent
    trail.resolve("sessions/gone/deeper/1.json")
    assert trail.absent("sessions/gone/deeper/1.json")


def test_a_link_is_still_resolved_in_full(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out" / "sessions").mkdir(parents=True)
    os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "sessions" / "linked")
    trail = ShardTrail(tmp_path / "out")
    with pytest.raises(PathEscape):
        trail.resolve("sessions/linked/1.json")
    assert not trail.absent("sessions/linked/1.json")
