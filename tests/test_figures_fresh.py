"""The README's and guides' figures are as fresh as what they are drawn from.

``docs/make_figures.py`` records each figure it draws in ``docs/figures/figures.json``
(its command, its file's SHA-256 and a fingerprint of its configuration and drawing
code); ``--check`` recomputes the fingerprints.  A figure whose configuration or
drawing code changed since it was drawn fails here with the command that redraws it.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from limits import limit

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "make_figures.py"
#: Figures of the benchmark suite (benchmarks/run_all.py), not of make_figures.py.
BENCH = {"bench_scaling.png", "bench_precision.png"}


def _check(out: Path):
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--out", str(out)],
                          capture_output=True, text=True, timeout=limit(300))


def test_every_figure_is_fresh():
    r = _check(ROOT / "docs" / "figures")
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_figure_the_docs_show_is_drawn_by_the_script():
    manifest = json.loads((ROOT / "docs" / "figures" / "figures.json").read_text())
    shown = set()
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        shown |= set(re.findall(r"figures/([A-Za-z0-9_]+\.png)", doc.read_text()))
    assert shown, "no figure found in the docs: the pattern is wrong"
    assert shown - BENCH <= set(manifest), sorted(shown - BENCH - set(manifest))


def test_the_check_fails_on_a_changed_file_and_a_changed_configuration(tmp_path):
    manifest = json.loads((ROOT / "docs" / "figures" / "figures.json").read_text())
    for name in manifest:
        (tmp_path / name).write_bytes((ROOT / "docs" / "figures" / name).read_bytes())
    # one figure's file replaced, another's recorded inputs from another configuration
    (tmp_path / "jury.png").write_bytes(b"not the figure")
    manifest["amp_gap.png"]["inputs"] = manifest["jury.png"]["inputs"]
    (tmp_path / "figures.json").write_text(json.dumps(manifest))
    r = _check(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "jury.png: the file is not the one this script wrote" in r.stdout, r.stdout
    assert "amp_gap.png: its configuration or drawing code changed" in r.stdout, r.stdout
    assert "python docs/make_figures.py amp_gap jury" in r.stderr, r.stderr
    assert len(r.stdout.strip().splitlines()) == 2, r.stdout


def test_the_fingerprint_follows_drawing_code_not_argument_parsing(tmp_path, monkeypatch):
    """The drawing code is fingerprinted as its syntax tree, without antiamp-plot's
    command-line ``main`` and the imports: a comment, a layout change or a change to
    the argument parsing leaves it as it was; a changed drawing function does not."""
    import importlib.util
    import types

    spec = importlib.util.spec_from_file_location("make_figures", SCRIPT)
    mf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mf)

    def module(src):
        p = tmp_path / f"m{abs(hash(src))}.py"
        p.write_text(src)
        m = types.ModuleType(p.stem)
        m.__file__ = str(p)
        m.__loader__ = None  # the source is read from the file (nothing imported)
        return m

    base = ("import argparse\n\ndef draw(ax):\n    ax.plot([1, 2])\n\n"
            "def main():\n    ap = argparse.ArgumentParser()\n")
    fp = mf._source(module(base), skip=("main",))
    same = ("from x import Parser  # another parser\n\ndef draw(ax):\n    ax.plot([1,  2])"
            "  # a comment\n\ndef main():\n    ap = Parser(prog='p')\n")
    assert mf._source(module(same), skip=("main",)) == fp
    other = base.replace("[1, 2]", "[1, 3]")
    assert mf._source(module(other), skip=("main",)) != fp
