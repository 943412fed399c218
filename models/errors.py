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
    ARCHIVE_UNSAFE = "archive_unsafe"
    """A tar or gzip archive, or one of its entries, refused by the same rules as a zip's."""
    ARCHIVE_CORRUPT = "archive_corrupt"
    """An archive entry whose compressed data cannot be decompressed (a damaged stream, a bad CRC)."""
    ARCHIVE_UNSUPPORTED = "archive_unsupported"
    """An archive entry stored with a compression method this Python cannot read."""
    SYMLINK_LOOP = "symlink_loop"
    OUTSIDE_ROOT = "outside_root"
    """A symbolic link to a file outside the input root, not followed (``follow_outside_links``)."""
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
    POSSIBLE_MERGED_TURNS = "possible_merged_turns"
    TIMESTAMP_FORMAT = "timestamp_format"
    SCHEMA = "schema"
    SNAPSHOT_MERGE = "snapshot_merge"
    # emit
    DUPLICATE_SESSION_ID = "duplicate_session_id"
    MASS_LATCH = "mass_latch"
    WRITE_ERROR = "write_error"
    PATH_ESCAPE = "path_escape"
    """A computed output path that would leave the output root (a bug guard: ids are made safe first)."""
    INTERNAL = "internal_error"
    # routes
    NOT_STREAMABLE = "not_streamable"
    UNTRANSLATABLE = "untranslatable_pattern"
    """A header pattern with no exact equivalent in Rust's regex syntax (parsers/columns.py)."""
    # configuration
    INVALID_CONFIG = "invalid_config"
    # environment
    CLUSTER_UNAVAILABLE = "cluster_unavailable"
    # audit trail
    DIFF_CHECKSUM = "diff_checksum"
    UNKNOWN_DOCUMENT = "unknown_document"
    AMBIGUOUS_DOCUMENT = "ambiguous_document"
    UNKNOWN_REVISION = "unknown_revision"
    REVISION_SYNTAX = "revision_syntax"
    DOCUMENT_CHANGED = "document_changed"
    STORE_CORRUPT = "store_corrupt"
    # the auditor's view (audit/query.py, audit/browse)
    QUERY = "query_error"
    NOT_FOUND = "not_found"
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
        """Pickle by the instance's fields, so an error raised in a worker process reaches the parent
        intact whatever its subclass's constructor takes (the default would call ``cls(message)``)."""
        return (_rebuild, (type(self), dict(vars(self))))

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


class NotStreamable(ReconstructError):
    """A large input that must be read whole (not UTF-8, a line the pre-pass cannot cut at, a gap the
    accounting must name): a decision made from the input's content, not a failure of the route."""


class ConfigError(ReconstructError):
    """The run's configuration is invalid; the run cannot start."""


class ClusterError(ReconstructError):
    """The Dask cluster a run asks for cannot be used (the ``dask`` extra missing, no scheduler at the
    address); the run cannot start."""


class EnvironmentFault(ReconstructError):
    """The environment failed the run (a full disk, a read-only output, a corrupt ledger, Prefect
    unreachable, a file-descriptor limit): nothing an input did, so the run stops, marked failed."""


class RegistryError(ReconstructError):
    """A grammar was registered twice or asked for by an unknown name."""


class AuditError(ReconstructError):
    """A question asked of the output root cannot be answered (bad SQL, no such session or run)."""


def _rebuild(cls: type[ReconstructError], fields: dict[str, object]) -> ReconstructError:
    error = cls.__new__(cls)
    vars(error).update(fields)
    Exception.__init__(error, error._message())
    return error
