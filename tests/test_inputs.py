"""Every reader of an input file refuses, quickly and in bounded memory, what it must
not read whole or at all: a FIFO (which would block it forever), a device
(``/dev/zero``, which never ends), a file over its kind's size bound, a zip member
whose declared size is over the member bound, a table with too many columns or a
column named twice (sim/inputs.py).

The oversized files are sparse (no disk is used), and the oversized zip members are
declared by the archive's directory only, so that the refusal is shown to come from
the directory, before anything is decompressed.  Time and memory are bounded
generously: a reader that read the file would take minutes and gigabytes.
"""

from __future__ import annotations

import os
import resource
import stat
import threading
import zipfile
from pathlib import Path

import pytest

from antiamp import inputs
from antiamp.config import ConfigError
from antiamp.estimation.logs import LogError, load_log

#: Generous bounds: a refusal takes milliseconds, a read of what is refused minutes.
SECONDS, MEGABYTES = 120, 300

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def refused(fn, error, match: str):
    """``fn()`` raises ``error`` matching ``match`` within SECONDS, the process's peak
    memory growing by less than MEGABYTES; the message is one line."""
    before = _rss_mb()
    box = {}

    def call():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["exc"] = exc

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(SECONDS)
    assert not t.is_alive(), f"still reading after {SECONDS} s"
    exc = box.get("exc")
    assert isinstance(exc, error), repr(exc)
    msg = str(exc)
    assert "\n" not in msg and match in msg, msg
    assert _rss_mb() - before < MEGABYTES
    return msg


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _zip_declaring(path: Path, member: str, declared: int) -> Path:
    """A small Inspect-like archive whose directory declares ``member`` to be
    ``declared`` bytes once decompressed (its data is a few bytes)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", "{}")
        if member != "header.json":
            z.writestr(member, "{}")
    b = bytearray(path.read_bytes())
    name = member.encode()
    at = 0
    while True:  # the central directory's entry for the member
        at = b.index(b"PK\x01\x02", at)
        n = int.from_bytes(b[at + 28:at + 30], "little")
        if bytes(b[at + 46:at + 46 + n]) == name:
            b[at + 24:at + 28] = declared.to_bytes(4, "little")
            break
        at += 4
    path.write_bytes(bytes(b))
    return path


# ------------------------------------------------------------------ logs
@pytest.mark.parametrize("name", ["log.csv", "log.parquet", "x.eval"])
def test_a_fifo_log_is_refused_not_read(tmp_path, name):
    p = _fifo(tmp_path / name)
    refused(lambda: load_log(p), LogError, "is a FIFO")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_refused_as_a_log_and_a_mapping(tmp_path):
    refused(lambda: load_log("/dev/zero"), LogError, "is a device")
    from antiamp.estimation.inspect_logs import load_mapping

    refused(lambda: load_mapping("/dev/zero", LogError), LogError, "is a device")


def test_a_proc_file_is_refused(tmp_path):
    p = Path("/proc/self/status")
    if not p.exists() or not stat.S_ISREG(os.stat(p).st_mode):
        pytest.skip("no /proc")
    refused(lambda: load_log(p), LogError, "/proc file")


@pytest.mark.parametrize("name,size", [("big.csv", (16 << 30) + 1),
                                       ("big.parquet", (1 << 30) + 1),
                                       ("big.eval", (4 << 30) + 1)])
def test_an_oversized_log_is_refused_before_it_is_read(tmp_path, name, size):
    p = _sparse(tmp_path / name, size)
    msg = refused(lambda: load_log(p), LogError, "over the bound")
    assert inputs.ENV_BYTES in msg  # the way to lift it


@pytest.mark.parametrize("member,declared", [("samples/1_epoch_1.json", 2**31),
                                             ("header.json", 2**30)])
def test_an_oversized_zip_member_is_refused_from_the_directory(tmp_path, member, declared):
    p = _zip_declaring(tmp_path / "x.eval", member, declared)
    msg = refused(lambda: load_log(p), LogError, f"member {member!r}")
    assert f"{declared:,} bytes" in msg and inputs.ENV_BYTES in msg


def test_a_zip_of_too_many_members_is_refused_from_its_end_record(tmp_path, monkeypatch):
    """An archive of 300,000 empty members: refused from its end record in well under a
    second, before zipfile parses the directory (5-9 s and 340 MB before); the count
    read by hand equals zipfile's, zip64 end records included; the bound is lifted."""
    import time
    import zipfile

    p = tmp_path / "x.eval"
    with zipfile.ZipFile(p, "w") as z:
        for i in range(300_000):
            z.writestr(f"samples/{i}.json", b"")
    t = time.perf_counter()
    msg = refused(lambda: load_log(p), LogError, "300,000 members")
    assert time.perf_counter() - t < 2 and inputs.ENV_MEMBERS in msg
    monkeypatch.setenv(inputs.ENV_MEMBERS, "400000")
    inputs.check_zip(p, LogError)  # lifted: no refusal
    for n, zip64 in ((0, False), (3, False), (70_000, True)):  # past 65,535: zip64
        q = tmp_path / f"{n}.zip"
        with zipfile.ZipFile(q, "w") as z:
            for i in range(n):
                z.writestr(f"{i}", b"")
        with zipfile.ZipFile(q) as z:
            assert inputs.zip_members(q) == len(z.infolist()) == n
        assert (b"PK\x06\x06" in q.read_bytes()[-200:]) == zip64
    (tmp_path / "no.zip").write_bytes(b"not a zip archive")
    assert inputs.zip_members(tmp_path / "no.zip") is None


def test_a_folder_of_logs_with_a_fifo_among_them_is_refused(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    _fifo(d / "a.eval")
    refused(lambda: load_log(d), LogError, "a.eval is a FIFO")


def test_the_bound_is_lifted_by_its_environment_variable(tmp_path, monkeypatch):
    p = tmp_path / "x.eval"
    _zip_declaring(p, "samples/1_epoch_1.json", 2**31)
    monkeypatch.setenv(inputs.ENV_BYTES, str(2**33))
    inputs.check_zip(p, LogError)  # lifted: no refusal
    monkeypatch.setenv(inputs.ENV_BYTES, "10")
    with pytest.raises(LogError, match="over the bound of 10 bytes"):
        inputs.check_input(tmp_path / "x.eval", "eval", LogError)


def test_a_million_column_csv_is_refused_from_its_header(tmp_path):
    p = tmp_path / "wide.csv"
    p.write_text(",".join(f"c{i}" for i in range(10**6)) + "\n"
                 + ",".join("1" for _ in range(10**6)) + "\n")
    msg = refused(lambda: load_log(p), LogError, "header is longer than")
    assert inputs.ENV_COLUMNS in msg


SAMPLE_LOG = Path(inputs.__file__).parent / "data" / "sample_log.csv"


def test_a_row_of_a_million_fields_under_a_short_header_is_refused(tmp_path):
    """The header within every bound, one row of 10^6 fields: pandas took the extra
    fields as an index of 10^6 levels (over a minute, gigabytes)."""
    p = tmp_path / "row.csv"
    with open(SAMPLE_LOG) as f:
        head = f.readline()
    p.write_text(head + ",".join("1" for _ in range(10**6)) + "\n")
    refused(lambda: load_log(p), LogError, "row 0: 1,000,000 fields, more than the header's 12")


@pytest.mark.parametrize("where", [0, 5])
def test_a_row_with_a_field_more_than_the_header_is_refused_not_shifted(tmp_path, where):
    """A first row with one field more than the header was read with its first field
    as the index, every column shifted by one (the instance column read as protocol):
    a silent misreading.  Any such row is refused, naming it."""
    lines = SAMPLE_LOG.read_text().splitlines()[:20]
    lines[1 + where] += ",1"
    p = tmp_path / "extra.csv"
    p.write_text("\n".join(lines) + "\n")
    refused(lambda: load_log(p), LogError, f"row {where}: 13 fields, more than the header's 12")
    p.write_text("\n".join(lines[:1 + where] + lines[2 + where:]))  # (no final newline)
    assert len(load_log(p)) > 0


def test_an_unfinished_last_row_with_too_many_fields_is_refused(tmp_path):
    lines = SAMPLE_LOG.read_text().splitlines()[:5]
    p = tmp_path / "open.csv"
    p.write_text("\n".join(lines) + ",1,2")  # no newline after the last row
    refused(lambda: load_log(p), LogError, "row 3: 14 or more fields")


def test_a_csv_over_the_column_bound_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_COLUMNS", 8)
    p = tmp_path / "wide.csv"
    p.write_text(",".join(f"c{i}" for i in range(9)) + "\n" + ",".join("1" * 9) + "\n")
    refused(lambda: load_log(p), LogError, "9 columns, over the bound of 8")


def test_a_parquet_log_over_the_column_bound_is_refused(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    monkeypatch.setattr(inputs, "MAX_COLUMNS", 8)
    p = tmp_path / "wide.parquet"
    pq.write_table(pa.table({f"c{i}": [1] for i in range(9)}), p)
    refused(lambda: load_log(p), LogError, "9 columns, over the bound of 8")


# ------------------------------------------------------------------ mapping, bets, votes
def test_a_mapping_file_is_bounded(tmp_path):
    from antiamp.estimation.inspect_logs import load_mapping

    refused(lambda: load_mapping(_fifo(tmp_path / "m.yaml"), LogError), LogError, "is a FIFO")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * ((1 << 20) + 1))
    refused(lambda: load_mapping(big, LogError), LogError, "over the bound")


def _bets(path):
    from antiamp.models.confidence.core import load_bets

    load_bets.cache_clear()
    return load_bets(str(path))


def test_a_bets_file_is_bounded(tmp_path):
    refused(lambda: _bets(_fifo(tmp_path / "b.csv")), ConfigError, "is a FIFO")
    refused(lambda: _bets(_sparse(tmp_path / "big.csv", (256 << 20) + 1)), ConfigError,
            "over the bound")
    if os.path.exists("/dev/zero"):
        refused(lambda: _bets("/dev/zero"), ConfigError, "is a device")


def test_a_bets_file_with_two_bet_columns_is_refused(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("# a comment line\ndebate,condition,side,round,bet,bet\n"
                 "1,x,proposition,1,50,60\n")
    refused(lambda: _bets(p), ConfigError, "names the column 'bet' twice")


BETS = Path(inputs.__file__).parent / "data" / "overconfidence2025_bets.csv"


def test_a_bets_row_of_a_million_fields_is_refused_and_comments_hold_no_fields(tmp_path):
    """As a log's: a row wider than the header is refused quickly (pandas indexed a
    row of 10^6 fields for seconds to minutes); the commas of a comment (the text after
    ``#``, which pandas skips) are not fields."""
    lines = BETS.read_text().splitlines()
    note = "# a note, with, more, commas, than, the, header, has, columns"
    ok = tmp_path / "ok.csv"
    ok.write_text("\n".join([note, lines[0], note, *lines[1:], "1,x,m,proposition,1,50 # a, b, c"])
                  + "\n")
    assert len(_bets(ok)) == len(lines)
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join([note, *lines[:4], ",".join("1" for _ in range(10**6))]) + "\n")
    refused(lambda: _bets(wide), ConfigError, "1,000,000 fields, more than the header's 6")


def test_a_votes_row_wider_than_its_header_is_refused(tmp_path):
    from antiamp.models.confidence.core import _votes_csv

    p = tmp_path / "v.csv"
    p.write_text("debate,judge,vote\n1,1,1\n" + ",".join("1" for _ in range(10**6)) + "\n")
    refused(lambda: _votes_csv(str(p), 0, 3), ConfigError, "1,000,000 fields")


def test_a_votes_file_is_bounded(tmp_path):
    from antiamp.models.confidence.core import _votes_csv

    for p, what in ((_fifo(tmp_path / "v.csv"), "is a FIFO"),
                    (_sparse(tmp_path / "big.csv", (256 << 20) + 1), "over the bound")):
        refused(lambda: _votes_csv(str(p), 0, 3), ConfigError, what)


# ------------------------------------------------------------------ config folders
@pytest.mark.parametrize("flag", ["--config-dir", "--config-path"])
@pytest.mark.parametrize("kind", ["fifo", "oversized"])
def test_a_config_folder_with_an_unreadable_yaml_is_refused_before_hydra_reads_it(
        tmp_path, flag, kind):
    """A user's config folder passes the reader policy: a FIFO named like a config
    would block Hydra forever, an oversized one be read whole.  Refused in one line
    naming the file, before any directory is made."""
    from antiamp.cmdline import parse

    folder = tmp_path / "myconf"
    (folder / "sweep").mkdir(parents=True)
    (folder / "sweep" / "ok.yaml").write_text("# @package _global_\nsweep: {name: ok}\n")
    bad = folder / "sweep" / "x.yaml"
    what = "is a FIFO" if kind == "fifo" else "over the bound"
    _fifo(bad) if kind == "fifo" else _sparse(bad, (1 << 20) + 1)
    msg = refused(lambda: parse([flag, str(folder), "model.rho=0.3"]), ConfigError, what)
    assert f"{flag} {folder}: sweep/x.yaml" in msg, msg
    bad.unlink()  # the same folder, its files all regular and small: accepted
    assert parse([flag, str(folder), "model.rho=0.3"]) is not None


def test_a_config_folder_refused_by_the_command_makes_no_directory(tmp_path):
    from cli_runner import run_command

    folder = tmp_path / "myconf"
    folder.mkdir()
    _fifo(folder / "config.yaml")
    r = run_command("antiamp", ["--config-dir", folder, "hydra.run.dir=run"], tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "config.yaml is a FIFO" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()


def test_an_estimates_store_with_a_fifo_is_refused_not_read(tmp_path):
    """``antiamp-design --estimates``: a store whose root metadata is a FIFO (its reader
    would wait forever) is refused, naming the entry, before anything is read."""
    from antiamp.design import DesignError, judge_from_estimates

    store = tmp_path / "estimates.zarr"
    store.mkdir()
    os.mkfifo(store / ".zgroup")
    refused(lambda: judge_from_estimates(store), DesignError, ".zgroup is a FIFO")
