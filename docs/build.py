"""Build the documentation site: ``python docs/build.py [--out DIR] [--clean]``.

Runs ``sphinx-build -W --keep-going -b html docs <out>`` (default
``docs/_build/html``): every warning is an error, so a broken internal link, a
missing page or a notebook that stops working fails the build (exit status 1)."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent


def build(out: Path, *, clean: bool = False, quiet: bool = False) -> int:
    from sphinx.cmd.build import build_main

    out = Path(out)
    doctrees = out.parent / f".{out.name}-doctrees"
    if clean:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(doctrees, ignore_errors=True)
    args = ["-W", "--keep-going", "-b", "html", "-d", str(doctrees), str(DOCS), str(out)]
    return build_main(args + (["-q"] if quiet else []))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python docs/build.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DOCS / "_build" / "html",
                    help="the site's folder (default docs/_build/html)")
    ap.add_argument("--clean", action="store_true", help="build from scratch")
    ap.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    status = build(args.out, clean=args.clean, quiet=args.quiet)
    took = time.perf_counter() - t0
    if status == 0:
        print(f"docs built in {took:.0f} s: {args.out / 'index.html'}")
    sys.exit(status)


if __name__ == "__main__":
    main()
