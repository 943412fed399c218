"""The inputs of a shard that are read whole, read a window at a time and detected together.

Detection costs little per input once it is batched (``registry.detect_many``: one polars pass per rule
over the samples of every input of the window), so the shard reads the next inputs it will read whole,
decodes them and detects them at once, then processes each with its detection. Inputs streamed, grouped,
ignored, with a problem or over the memory budget are not in a window: they are read and detected one by
one as before. A window holds at most ``WINDOW_INPUTS`` inputs and ``WINDOW_BYTES`` bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.errors import DetectionError, IngestError, Reason, ReconstructError
from models.records import Detection, SourceText
from parsers import registry
from parsers.memory import paused_gc
from parsers.text import decode

from . import ingest
from .process import DETECT_SAMPLE, failure

WINDOW_INPUTS = 256
WINDOW_BYTES = 32 * 1024 * 1024


@dataclass(slots=True)
class Loaded:
    """An input of a window: its bytes, its decoded text (None when decoding failed: processing decodes
    it again and quarantines it with the reason) and its detection (None when it was not detected: not
    decoded, or unchanged since an earlier run)."""

    data: bytes
    decoded: SourceText | None
    detection: Detection | ReconstructError | None


class Window:
    """Hands the shard each input's ``Loaded`` (or None for an input no window holds), loading the next
    window when the shard reaches an input past the current one."""

    def __init__(self, refs: list[ingest.InputRef], whole: Callable[[ingest.InputRef], bool],
                 read: Callable[[ingest.InputRef], bytes], unchanged: Callable[[ingest.InputRef, str], bool],
                 threshold: float, forced: str | None) -> None:
        self.refs, self.whole, self.read, self.unchanged = refs, whole, read, unchanged
        self.threshold, self.forced = threshold, forced
        self.end = 0
        self.loaded: dict[int, Loaded] = {}

    def take(self, index: int) -> Loaded | None:
        """The input ``refs[index]`` as loaded (and forgotten by the window), or None."""
        if index >= self.end:
            self._load(index)
        return self.loaded.pop(index, None)

    def _load(self, start: int) -> None:
        with paused_gc():  # as processing one input does: nothing read or detected holds cycles
            self._fill(start)

    def _fill(self, start: int) -> None:
        self.loaded.clear()
        size = 0
        end = start
        while end < len(self.refs) and end - start < WINDOW_INPUTS and size < WINDOW_BYTES:
            ref = self.refs[end]
            if self.whole(ref):
                loaded = self._read(ref)
                if loaded is not None:
                    self.loaded[end] = loaded
                    size += len(loaded.data)
            end += 1
        self.end = end
        self._detect()

    def _read(self, ref: ingest.InputRef) -> Loaded | None:
        """The input read and decoded; None when it cannot be read (the shard reads it again alone and
        records why, or retries the shard on a transient failure)."""
        try:
            data = self.read(ref)
        except IngestError:
            return None
        try:
            decoded = decode(data, ref.name)
        except ReconstructError:
            decoded = None
        return Loaded(data, decoded, None)

    def _detect(self) -> None:
        """Detect every decoded input of the window that is not unchanged, at once."""
        todo = [(i, loaded) for i, loaded in self.loaded.items()
                if loaded.decoded is not None and not self.unchanged(self.refs[i], loaded.decoded.sha256)]
        samples = [(loaded.decoded.text[:DETECT_SAMPLE], loaded.decoded.name) for _, loaded in todo]
        try:
            found: list = registry.detect_many(samples, threshold=self.threshold, forced=self.forced)
        except ReconstructError as exc:  # an unknown forced format: every input's own answer, as alone
            found = [exc] * len(todo)
        except Exception as exc:  # recorded on each input of the window; the shard goes on
            found = [DetectionError(Reason.INTERNAL, f"batched detection failed: {failure(exc)}", path=name)
                     for _, name in samples]
        for (_, loaded), detection in zip(todo, found, strict=True):
            loaded.detection = detection
