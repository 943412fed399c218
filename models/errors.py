"""One error root with reason codes, so callers ask the type and the code, never the message."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Reason codes recorded in the ledger and the quarantine records."""

    # ingest
    UNREADABLE = "unreadable"
    EMPTY = "empty"
    UNDECODABLE = "undecodable"
    BINARY = "binary"
    TOO_LARGE = "too_large"
    ZIP_UNSAFE = "zip_unsafe"
    NAME_COLLISION = "name_collision"
    WORKER_DIED = "worker_died"
    # detect
    NO_GRAMMAR = "no_grammar"
    AMBIGUOUS_GRAMMAR = "ambiguous_grammar"
    UNKNOWN_GRAMMAR = "unknown_grammar"
    # parse
    PARSE_ERROR = "parse_error"
    NO_TURNS = "no_turns"
    # gate
    JSON_SYNTAX = "json_syntax"
    SPEAKER_FORMAT = "speaker_format"
    SPEAKER_MIRROR = "speaker_mirror"
    MODEL_FIELD = "model_field"
    TURN_COUNT = "turn_count"
    UNACCOUNTED_SOURCE = "unaccounted_source"
    TIMESTAMP_FORMAT = "timestamp_format"
    SCHEMA = "schema"
    SNAPSHOT_MERGE = "snapshot_merge"
    # emit
    DUPLICATE_SESSION_ID = "duplicate_session_id"
    MASS_LATCH = "mass_latch"
    WRITE_ERROR = "write_error"
    INTERNAL = "internal_error"
    # configuration
    INVALID_CONFIG = "invalid_config"
    # audit trail
    DIFF_CHECKSUM = "diff_checksum"
    # the environment (flows/faults.py): the run stops, exit 4, one line
    DISK_FULL = "disk_full"
    OUTPUT_READ_ONLY = "output_read_only"
    OUTPUT_IO = "output_io_error"
    FILE_SYSTEM = "file_system_error"
    LEDGER_CORRUPT = "ledger_corrupt"
    LEDGER_UNUSABLE = "ledger_unusable"
    PREFECT_UNAVAILABLE = "prefect_unavailable"
    PREFECT_HOME = "prefect_home_unwritable"
    TOO_MANY_OPEN_FILES = "too_many_open_files"


class ReconstructError(Exception):
    """Root of every error the pipeline raises on purpose.

    ``transient`` marks errors worth retrying (I/O hiccups); everything else is terminal:
    the input is quarantined with ``reason`` and the run goes on.
    """

    transient = False

    def __init__(self, reason: Reason, detail: str, *, path: str | None = None,
                 line: int | None = None, grammar: str | None = None) -> None:
        self.reason = reason
        self.detail = detail
        self.path = path
        self.line = line
        self.grammar = grammar
        super().__init__(self._message())

    def __reduce__(self):
        """Pickle by the constructor's arguments, so an error raised in a worker process reaches
        the parent intact (the default would call ``cls(message)`` and fail there)."""
        return (_rebuild, (type(self), self.reason, self.detail, self.path, self.line, self.grammar))

    def _message(self) -> str:
        where = "".join(
            part for part in (
                f" in {self.path}" if self.path else "",
                f" line {self.line}" if self.line is not None else "",
                f" [{self.grammar}]" if self.grammar else "",
            )
        )
        return f"{self.reason.value}{where}: {self.detail}"


class IngestError(ReconstructError):
    """The bytes could not be turned into canonical text."""


class TransientIngestError(IngestError):
    """An I/O error that may pass on retry."""

    transient = True


class DetectionError(ReconstructError):
    """No grammar, or more than one, fits the input."""


class ParseError(ReconstructError):
    """The chosen grammar could not parse the input."""


class ConfigError(ReconstructError):
    """The run's configuration is invalid; the run cannot start."""


class EnvironmentFault(ReconstructError):
    """The environment failed the run (a full disk, a read-only output, a corrupt ledger, Prefect
    unreachable, a file-descriptor limit): nothing an input did, so the run stops, marked failed."""


class RegistryError(ReconstructError):
    """A grammar was registered twice or asked for by an unknown name."""


def _rebuild(cls: type[ReconstructError], reason: Reason, detail: str, path: str | None, line: int | None,
             grammar: str | None) -> ReconstructError:
    return cls(reason, detail, path=path, line=line, grammar=grammar)
