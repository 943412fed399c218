"""One error root: every exception class of the product derives from it, carries a reason code and
crosses a process boundary intact; the ledger's errors are environment faults by their type and code."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import sqlite3

import pytest
import typer

from models.errors import EnvironmentFault, Reason, ReconstructError

PACKAGES = ["models", "parsers", "normalizers", "validators", "audit", "flows"]


def _exception_classes() -> list[type[BaseException]]:
    """Every exception class defined at the top of a module of the product's packages."""
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        names = [package, *(m.name for m in pkgutil.walk_packages(root.__path__, f"{package}."))]
        for name in names:
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (inspect.isclass(value) and issubclass(value, BaseException)
                        and value.__module__ == name):
                    found[f"{name}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


CLASSES = _exception_classes()


def _sample(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` made through its own constructor, each argument a plausible value."""
    args, kwargs = [], {}
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if p.kind is p.KEYWORD_ONLY:
            value = {"path": "in/a.txt", "line": 7, "grammar": "irc"}.get(p.name)
            if value is not None:
                kwargs[p.name] = value
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        annotation = str(p.annotation)
        if p.name == "reason":
            args.append(Reason.PARSE_ERROR)
        elif "list" in annotation:
            args.append(["sessions/a.json", "sessions/b.json"])
        elif "int" in annotation:
            args.append(3)
        else:
            args.append(f"the {p.name}")
    return cls(*args, **kwargs)


def test_the_walk_finds_the_classes_outside_models():
    names = {c.__name__ for c in CLASSES}
    assert {"LedgerError", "PathEscape", "SplitError", "Untranslatable", "AmbiguousDocument"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_exception_class_derives_from_the_root(cls):
    assert issubclass(cls, ReconstructError), f"{cls.__module__}.{cls.__qualname__} is outside the error root"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_exception_pickles_round_trip_with_its_reason_and_fields(cls):
    error = _sample(cls)
    assert isinstance(error.reason, Reason)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert vars(back) == vars(error)
    assert back.args == error.args


def test_a_ledger_error_is_an_environment_fault_with_its_reason(tmp_path):
    from audit.ledger import Ledger, LedgerError

    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"not a database, not at all" * 200)
    with pytest.raises(LedgerError) as caught:
        Ledger(path)
    assert isinstance(caught.value, EnvironmentFault)
    assert caught.value.reason is Reason.LEDGER_CORRUPT
    with pytest.raises(LedgerError) as caught:
        Ledger(tmp_path / "nothing" / "ledger.sqlite", read_only=True)
    assert caught.value.reason is Reason.LEDGER_UNUSABLE


def test_fault_of_takes_a_ledger_error_as_it_is():
    from audit.ledger import LedgerError
    from flows.faults import fault_of

    error = LedgerError(Reason.DISK_FULL, "ledger out/ledger.sqlite cannot be used: database or disk is full")
    assert fault_of(error) is error
    try:
        try:
            raise error
        except LedgerError as exc:
            raise RuntimeError("the run's end") from exc
    except RuntimeError as outer:
        assert fault_of(outer) is error


@pytest.mark.parametrize("error", [
    EnvironmentFault(Reason.DISK_FULL, "no space left"),
    EnvironmentFault(Reason.OUTPUT_READ_ONLY, "read-only", path="out"),
])
def test_one_line_ends_an_environment_fault_with_exit_4_by_its_reason(error, capsys):
    from flows.exits import ExitCode, one_line

    with pytest.raises(typer.Exit) as stopped, one_line("history"):
        raise error
    assert stopped.value.exit_code == ExitCode.CANNOT_START
    assert capsys.readouterr().err.startswith("history: ")


def test_one_line_ends_a_ledger_error_with_exit_4(tmp_path, capsys):
    from audit.ledger import Ledger
    from flows.exits import ExitCode, one_line

    with pytest.raises(typer.Exit) as stopped, one_line():
        Ledger(tmp_path / "ledger.sqlite", read_only=True)
    assert stopped.value.exit_code == ExitCode.CANNOT_START
    expected = f"no ledger at {tmp_path / 'ledger.sqlite'}: nothing has run into {tmp_path}"
    assert capsys.readouterr().err.strip() == expected


def test_a_sqlite_error_is_classified_by_the_ledger_s_table():
    from audit.ledger import sqlite_reason

    assert sqlite_reason(sqlite3.DatabaseError("database disk image is malformed")) is Reason.LEDGER_CORRUPT
    assert sqlite_reason(sqlite3.OperationalError("no such table: nope")) is None
