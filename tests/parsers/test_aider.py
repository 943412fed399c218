"""Aider chat histories: a session per heading, user/tool/reply runs, the model from aider's own
line, fenced quotes in replies, and SEARCH/REPLACE blocks as file changes (patches apply)."""

from __future__ import annotations

from models.settings import Settings
from parsers import registry
from parsers.text import decode
from tests.helpers import GOLDEN
from tests.parsers.test_claude_code import documents, replay_patches
from validators import diffjson

GRAMMAR = registry.get("aider")
HISTORY = GOLDEN / "aider" / ".aider.chat.history.md"


def _sessions():
    return list(GRAMMAR.parse(decode(HISTORY.read_bytes(), HISTORY.name), Settings()))


def test_a_session_per_heading_with_its_id_and_time():
    first, second = _sessions()
    assert (first.session_id, second.session_id) == ("aider-2025-03-11-094217", "aider-2025-03-12-140551")
    assert first.created_raw == "2025-03-11 09:42:17" and first.lines == (1, 107)


def test_turns_models_and_commands():
    first, second = _sessions()
    prompt = first.turns[3]
    assert prompt.role == "user" and prompt.content.count("\n") == 1 and prompt.lines == (14, 15)
    reply = first.turns[4]
    assert (reply.model.provider, reply.model.name, reply.model.version) == (
        "anthropic", "claude-3-5-sonnet", "20241022")
    assert not reply.model_explicit  # aider states the model once for the session
    assert second.turns[2].model.provider == "gemini"
    assert "> 2025-03-04 write release notes" in second.turns[2].content  # a quote inside a fence
    assert [t.extra for t in first.turns if t.kind == "command"] == [{"userCommand": "add"}, {"userCommand": "run"}]


def test_search_replace_blocks_are_file_changes_with_patches_that_apply():
    doc = documents("aider", decode(HISTORY.read_bytes(), HISTORY.name))[0]
    record = doc["artifacts"]["ByggLogg"]["sessionRecord"]
    assert [(c["path"], c["operation"], "patch" in c) for c in record["fileChanges"]] == [
        ("tasklog/dates.py", "create", True), ("tasklog/cli.py", "edit", False), ("tasklog/cli.py", "edit", False),
        ("tasklog/dates.py", "edit", True), ("tests/test_dates.py", "create", True)]
    final = replay_patches(doc)
    assert "raise ValueError" in final["tasklog/dates.py"]
    assert {"turn": 10, "command": "python -m pytest -q"} in record["commands"]


WHOLE_AND_UDIFF = """# aider chat started at 2025-04-02 10:11:12

> Aider v0.80.0
> Main model: gpt-4o-2024-08-06 with whole edit format

#### create greet.py with a greet(name) function

greet.py
```python
def greet(name):
    return f"Hello, {name}!"
```

> Applied edit to greet.py

#### make it strip whitespace

greet.py
```python
def greet(name):
    return f"Hello, {name.strip()}!"
```

> Applied edit to greet.py

#### /model gpt-4-turbo
> Main model: gpt-4-turbo with udiff edit format

#### add a shout flag

```diff
--- greet.py
+++ greet.py
@@ ... @@
-def greet(name):
-    return f"Hello, {name.strip()}!"
+def greet(name, shout=False):
+    text = f"Hello, {name.strip()}!"
+    return text.upper() if shout else text
```

> Applied edit to greet.py
"""


def test_whole_file_and_udiff_replies_by_the_edit_format_aider_names():
    doc = documents("aider", decode(WHOLE_AND_UDIFF.encode(), ".aider.chat.history.md"))[0]
    changes = doc["artifacts"]["ByggLogg"]["sessionRecord"]["fileChanges"]
    assert [(c["via"], c["operation"], "patch" in c) for c in changes] == [
        ("whole-file", "write", False), ("whole-file", "write", True), ("udiff", "edit", True)]
    replay_patches(doc)  # each patch's base is the text the change before it left
    base = 'def greet(name):\n    return f"Hello, {name.strip()}!"\n'
    assert "shout=False" in diffjson.apply(changes[2]["patch"], base)
    replies = [i for i in doc["artifacts"]["Chatthistorik"]["interactions"] if i["role"] == "assistant"]
    assert [r["model"]["name"] for r in replies] == ["gpt-4o", "gpt-4o", "gpt-4-turbo"]


SWITCHES = """# aider chat started at 2024-05-01 10:00:00

> aider --model ollama/qwen:4b

#### /ask what does main.py do?

#### what does main.py do?

It prints hello.

#### /model openai/gpt-4o

#### add a docstring

Done.

> Model: gpt-4 using udiff edit format

#### and a test

Added.
"""


def test_models_from_the_command_line_model_switches_and_older_model_lines():
    (s,) = GRAMMAR.parse(decode(SWITCHES.encode(), ".aider.chat.history.md"), Settings())
    replies = [t for t in s.turns if t.role == "assistant"]
    assert [(t.model.provider, t.model.name) for t in replies] == [("ollama", "qwen:4b"), ("openai", "gpt-4o"),
                                                                   ("openai", "gpt-4")]


def test_an_ask_command_and_its_logged_question_are_one_user_turn():
    (s,) = GRAMMAR.parse(decode(SWITCHES.encode(), ".aider.chat.history.md"), Settings())
    users = [t.content for t in s.turns if t.role == "user"]
    assert users == ["/ask what does main.py do?", "/model openai/gpt-4o", "add a docstring", "and a test"]
    (echo,) = [r for r in s.regions if r.kind.value == "duplicate"]
    assert echo.lines == (7, 7) and "/ask" in echo.reason
    assert GRAMMAR.count_turns(s.raw) == len(s.turns)
