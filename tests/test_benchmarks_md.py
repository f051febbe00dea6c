"""``run_all.py`` regenerates BENCHMARKS.md and carries over, where they stood, the
sections other commands write (``benchmarks/mdsections.py``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from mdsections import keep_sections  # noqa: E402

OLD = """# antiamp benchmarks

Written 2026-11-24.

## Kernel throughput

old table

## Launcher

old launcher

## GPU

pending

### Machine code

ptx report, its own command

## Threads

old threads
"""

NEW = """# antiamp benchmarks

Written 2026-12-02.

## Kernel throughput

new table

## New section

new

## Threads

new threads

## GPU

pending, new text
"""


def test_regenerated_sections_replace_and_the_others_are_kept_in_place():
    out, kept = keep_sections(NEW, OLD)
    assert kept == ["## Launcher", "### Machine code"]
    heads = [line for line in out.splitlines() if line.startswith("#")]
    # after the section it followed, past the sections new to this run
    assert heads == ["# antiamp benchmarks", "## Kernel throughput", "## New section",
                     "## Launcher", "## Threads", "## GPU", "### Machine code"]
    assert "old table" not in out and "old threads" not in out and "new table" in out
    assert "Written 2026-12-02." in out and "2026-11-24" not in out
    assert "old launcher" in out and "ptx report, its own command" in out
    assert "pending, new text" in out and "\npending\n" not in out


def test_nothing_to_keep_leaves_the_new_text_as_it_is():
    out, kept = keep_sections(NEW, NEW)
    assert kept == [] and out == NEW
    out, kept = keep_sections(NEW, "")
    assert kept == [] and out == NEW
