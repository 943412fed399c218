"""What the HTML export grammars (telegram-html, vk-html) share: the elements that never close, and the
opening of an element as a stack of open elements with their classes."""

from __future__ import annotations

from html.parser import HTMLParser

VOID = frozenset({"br", "img", "meta", "link", "input", "hr", "source", "wbr", "col", "area", "base", "embed"})
"""Elements without an end tag."""


class ElementParser(HTMLParser):
    """An HTMLParser that keeps the open elements (tag, classes) on ``stack``; ``<br>`` is a line break
    handed to ``_data``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, frozenset[str]]] = []

    def _data(self, data: str) -> None:
        raise NotImplementedError

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """``<br/>``, ``<img/>``, ``<div/>`` (XHTML's form, as a page saved again by another tool writes
        it): the same as ``<br>``, ``<img>`` and an element that opens and closes at once."""
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def opened(self, tag: str, attrs: list[tuple[str, str | None]]) -> tuple[dict[str, str], frozenset[str], int,
                                                                                 int] | None:
        """(attributes, classes, line, depth) of an element that opens, now on the stack; None for a
        ``<br>`` (a line break, already handed on) or another element that never closes."""
        a = {k: v or "" for k, v in attrs}
        if tag == "br":
            self._data("\n")
            return None
        if tag in VOID:
            return None
        classes = frozenset(a.get("class", "").split())
        self.stack.append((tag, classes))
        return a, classes, self.getpos()[0], len(self.stack)
