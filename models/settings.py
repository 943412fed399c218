"""Run settings: built once when a run starts (flags > environment > config file > defaults), then passed down.

Environment variables use the prefix ``RECONSTRUCT_`` (``RECONSTRUCT_SOURCE_TZ=Europe/Stockholm``);
the config file is TOML (``reconstruct.toml`` in the working folder, or ``--config PATH``).
"""

from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson
import regex
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from models.errors import ConfigError, Reason

PIPELINE_VERSION = "0.4.0"

_IDENTITY = regex.compile(r"^(?P<provider>[^:]+):(?P<name>[^@]+)@(?P<version>.+)$")

ENV_PREFIX = "RECONSTRUCT_"
# RECONSTRUCT_* variables that are not settings: prefect.yaml's deployment paths, the golden-file switch of the tests.
OTHER_VARIABLES = frozenset({"RECONSTRUCT_HOME", "RECONSTRUCT_ARCHIVE", "RECONSTRUCT_OUT", "RECONSTRUCT_UPDATE_GOLDEN"})

# Settings that change what a document contains; their hash keys incremental skips.
DOCUMENT_SETTINGS = (
    "source_tz",
    "runtime_identity",
    "secrets_policy",
    "redact_pii",
    "format",
    "detect_threshold",
    "max_turn_chars",
    "snapshot_time_tolerance_seconds",
)


class Settings(BaseSettings):
    """Every knob of a run. Documents depend only on the fields named in DOCUMENT_SETTINGS."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True)

    source_tz: str = Field("UTC", description="IANA zone assumed for timestamps without a zone.")
    runtime_identity: str | None = Field(
        None,
        description="The reconstructing AI's own identity as provider:name@version; never used to fill "
        "historical data (rule A2).",
    )
    secrets_policy: Literal["redact", "report", "off"] = "redact"
    redact_pii: bool = Field(False, description="Also redact e-mail addresses and phone numbers.")
    format: str | None = Field(None, description="Force this grammar instead of detecting one.")
    detect_threshold: float = Field(0.5, ge=0.0, le=1.0)
    max_turn_chars: int = Field(1_000_000, ge=1, description="Longer turns are truncated (partial).")

    workers: int = Field(2, ge=1, description="Worker processes for the local process pool.")
    shard_bytes: int = Field(8 * 1024 * 1024, ge=1, description="Target input bytes per shard task.")
    shard_files: int = Field(2000, ge=1, description="At most this many files per shard task.")
    dask_address: str | None = Field(None, description="Run shards on this Dask scheduler.")
    task_retries: int = Field(2, ge=0)
    max_file_bytes: int = Field(4 * 1024**3, ge=1, description="Larger inputs are quarantined.")
    stream_text_bytes: int = Field(
        16 * 1024**2, ge=1, description="Text inputs this large are streamed when their grammar can (line "
        "grammars: memory bounded by a chunk)."
    )
    stream_json_bytes: int = Field(
        8 * 1024**2, ge=1, description="JSON exports this large (ChatGPT, Claude: a list of conversations, or a "
        "wrapper object holding one) are read entry by entry on every worker, each document written as it is "
        "done (memory bounded by a batch)."
    )
    stream_chunk_bytes: int = Field(
        2 * 1024**2, ge=1, description="Bytes read at a time from a streamed text input (memory per chunk)."
    )
    stream_range_bytes: int = Field(
        8 * 1024**2, ge=1, description="A streamed text input is cut into ranges of about this many bytes, read "
        "by the workers in parallel (same document whatever the cut)."
    )
    memory_budget_bytes: int | None = Field(
        None, ge=1, description="Memory one worker may spend on one input read whole; larger inputs are "
        "quarantined too_large (default: this machine's memory shared by the workers)."
    )
    zip_max_total_bytes: int = Field(8 * 1024**3, ge=1)
    zip_max_ratio: float = Field(200.0, gt=1)
    zip_max_entries: int = Field(100_000, ge=1)
    follow_outside_links: bool = Field(
        False, description="Read a symbolic link found in an input folder whose file lies outside the input root "
        "(off: such a link is quarantined outside_root and never read)."
    )

    ledger_path: Path | None = Field(None, description="SQLite run ledger (default OUT/ledger.sqlite).")
    mass_latch_threshold: float = Field(0.75, ge=0.0, le=1.0)
    snapshot_time_tolerance_seconds: int = Field(
        60, ge=0, le=3600, description="Merging snapshots of a session: two messages without a platform id "
        "match when author and content agree and their times (after a whole-hour zone shift) are this close."
    )
    mass_latch_overrides: dict[str, float] = Field(
        default_factory=dict, description="Per-dataset thresholds, keyed by the first path component."
    )

    @field_validator("source_tz")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("dask_address")
    @classmethod
    def _address_or_none(cls, value: str | None) -> str | None:
        """An empty address (a deployment's unset ``{{ $RECONSTRUCT_DASK_ADDRESS }}``) means no Dask."""
        return value.strip() or None if value is not None else None

    @field_validator("runtime_identity")
    @classmethod
    def _identity_form(cls, value: str | None) -> str | None:
        if value is not None and not _IDENTITY.fullmatch(value.strip()):
            raise ValueError("runtime_identity must look like provider:name@version")
        return value.strip() if value else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml = TomlConfigSettingsSource(settings_cls, toml_file=_CONFIG_FILE.get("path"))
        return init_settings, env_settings, toml

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Build the settings of one run. ``overrides`` are command-line flags; None means unset."""
        path = config_file if config_file is not None else Path("reconstruct.toml")
        if config_file is not None and not path.is_file():
            raise ConfigError(Reason.INVALID_CONFIG, "no such file", path=str(path))
        used = _CONFIG_FILE["path"] = path if path.is_file() else None
        where_file = str(used) if used else None
        try:
            _check_environment(os.environ)
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            raise ConfigError(Reason.INVALID_CONFIG, _first_problem(exc), path=where_file) from None
        except (ValueError, OSError) as exc:  # a malformed or unreadable TOML file
            raise ConfigError(Reason.INVALID_CONFIG, f"{type(exc).__name__}: {exc}", path=where_file) from None
        finally:
            _CONFIG_FILE.pop("path", None)

    @property
    def identity(self) -> dict[str, str] | None:
        """The runtime identity as the dict normalize_speaker takes."""
        if not self.runtime_identity:
            return None
        m = _IDENTITY.fullmatch(self.runtime_identity)
        return {"provider": m["provider"], "name": m["name"], "version": m["version"]}

    def fingerprint(self) -> str:
        """sha256 of the settings that shape documents, plus the pipeline version."""
        payload = {k: getattr(self, k) for k in DOCUMENT_SETTINGS} | {"pipeline": PIPELINE_VERSION}
        return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()

    def latch_threshold(self, dataset: str) -> float:
        return self.mass_latch_overrides.get(dataset, self.mass_latch_threshold)


RETIRED = {
    "columnar_min_bytes": "every line input is now read in its batch's table of lines, whatever its size",
    "stream_bytes": "a large JSON export streams from stream_json_bytes, wrapper objects included",
    "columnar": "every input is read by its grammar's one route; the turn-by-turn line parse is the tests' oracle",
}
"""Settings that earlier versions had, with why they went: a config that still names one is told so."""


def closest(name: str, known: list[str]) -> str:
    """`` (did you mean 'X'?)`` with the known name closest to ``name``, or nothing when none is close."""
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def _first_problem(exc: ValidationError) -> str:
    """The first error of a validation, one line; an unknown setting is named with the closest valid name."""
    first = exc.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "settings"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if first["type"] == "extra_forbidden":
        if where in RETIRED:
            return f"the setting {where!r} no longer exists: {RETIRED[where]}; remove it{more}"
        return f"unknown setting {where!r}{closest(where, list(Settings.model_fields))}{more}"
    return f"{where}: {first['msg']}{more}"


def _check_environment(environ: Any) -> None:
    """A RECONSTRUCT_* variable that names no setting is a misspelling (pydantic-settings ignores it)."""
    known = [ENV_PREFIX + name.upper() for name in Settings.model_fields]
    for name in sorted(environ):
        if name.upper().startswith(ENV_PREFIX) and name.upper() not in {*known, *OTHER_VARIABLES}:
            retired = RETIRED.get(name[len(ENV_PREFIX):].lower())
            if retired:
                raise ConfigError(Reason.INVALID_CONFIG, f"{name} names a setting that no longer exists: {retired}; "
                                  "unset it")
            raise ConfigError(Reason.INVALID_CONFIG, f"unknown setting in the environment: {name}"
                              + closest(name.upper(), known))


# The config-file path for the settings being built (pydantic-settings reads it in the hook above).
_CONFIG_FILE: dict[str, Path | None] = {}
