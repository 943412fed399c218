"""The accounting of a frame session one session at a time, as the product did it before its batches
(``validators.frames.account_frames``): kept as the oracle they must agree with."""

from __future__ import annotations

from models.records import ParsedSession
from parsers.columns import split_lines
from validators.accounting import Accountant, Accounting, BlankIndex, account_lines, account_spans, is_text_session


class PerSession(Accountant):
    """``Accountant`` with each frame session counted on its own: prefix sums over its spans
    (``account_spans``), its lines walked only to name what is loose or doubled."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.blanks: BlankIndex | None = None

    def account(self, parsed: ParsedSession, last: bool) -> Accounting:
        if parsed.frame is not None and len(self.texts) == 1 and (self.lines or is_text_session(parsed)):
            return self._frame(parsed, last)
        return super().account(parsed, last)

    def _frame(self, parsed: ParsedSession, last: bool) -> Accounting:
        part, text = self.texts[0]
        if self.blanks is None:
            self.blanks = BlankIndex(split_lines(text))
        extent = self._span(parsed, part, self.blanks.count, last) or (1, 0)
        starts, ends = parsed.frame["line_start"], parsed.frame["line_end"]
        regions = [r.lines for r in parsed.regions if r.lines]
        found = account_spans(self.blanks, extent, starts, ends, regions)
        if found is None:
            found = account_lines(self._index(part, text), extent,
                                  zip(starts.to_list(), ends.to_list(), strict=True), regions)
        if self.shape is not None:
            self._census(found, parsed, part, extent, lambda: set(starts.to_list()), regions)
        return found
