"""Wheels for a machine without a network (an air-gapped GPU cluster, a lent GPU box):
download them on a networked machine, install them there with ``--no-index``.

On a networked machine (the default target: CPython 3.12 on x86_64 Linux, glibc 2.28
or later)::

    python benchmarks/gpu_offline.py download          # into ./wheelhouse (git-ignored)
    python benchmarks/gpu_offline.py download --python-version 3.11 --freeze machine.txt

On the machine without a network, from a copy of the repository with its
``wheelhouse/``::

    python benchmarks/gpu_offline.py install --target .gpu-site
    export PYTHONPATH=$PWD/.gpu-site:$PYTHONPATH PATH=$PWD/.gpu-site/bin:$PATH

``download`` resolves, for the target Python and platform, everything antiamp needs
at run time, plus what ``tests/test_gpu.py`` needs (pytest, pytest-xdist, hypothesis),
the build backend (setuptools, to install antiamp itself from source) and pip; it
keeps the packages such a machine is expected to have already (:data:`PRESENT`: the
numerical stack and the CUDA packages, the heavy binary wheels) out of the
wheelhouse, downloads the rest as wheels (hydra-core's antlr4 runtime is published
as a source archive only: it is built here into a pure-Python ``py3-none-any``
wheel), writes ``wheelhouse/manifest.json`` and checks the total size (at most
``--max-mib``, 40 MiB by default: the wheelhouse must travel beside the repository,
64 MiB in all).  ``--freeze`` takes the ``pip freeze`` of the target machine: what
it lists is taken as present and pinned while resolving, so the wheels fit the
versions there.  pyarrow (about 40 MiB) is left out unless ``--include pyarrow``:
only reading Parquet logs (``antiamp.estimation.logs``) needs it.

``install`` installs, with ``pip install --no-index --no-deps``, exactly the
manifest's wheels whose package the running Python lacks, and then antiamp itself
from the repository (built offline: setuptools comes from the wheelhouse); nothing
already installed is upgraded or replaced (numpy, numba and numba-cuda stay as they
are, and the command checks that they did).  With ``--target DIR`` everything goes
into DIR (add it to ``PYTHONPATH``), which needs no virtual environment and no write
access to the system's site-packages (and sidesteps an "externally managed" system
Python); without it, into the running environment.  pip is taken from the
wheelhouse when the Python has none.  It then lists each requirement with the
version found and whether it satisfies antiamp's range, and exits 1 if antiamp
cannot be imported.

``list`` prints the manifest's wheels and their sizes.

A check of the whole path on one machine (the download needs the network, the
install does not; a fresh environment stands for the GPU machine)::

    python benchmarks/gpu_offline.py download --python-version 3.11 --dest /tmp/wh
    python -m venv /tmp/fresh && /tmp/fresh/bin/pip install numpy numba scipy pandas \\
        xarray matplotlib statsmodels        # what the GPU machine has
    PIP_CONFIG_FILE=/dev/null /tmp/fresh/bin/python benchmarks/gpu_offline.py install \\
        --wheelhouse /tmp/wh
    /tmp/fresh/bin/python -m pytest -p no:cacheprovider tests/test_gpu.py   # skips: no GPU
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "manifest.json"

#: Packages a GPU machine is expected to have (an image with numba-cuda and JAX: the
#: numerical stack and its heavy binary wheels); they stay out of the wheelhouse.
#: Smaller pure-Python dependencies are kept in it even where a machine is likely to
#: have them: ``install`` installs only what is missing.
PRESENT = ("numpy", "scipy", "pandas", "xarray", "matplotlib", "contourpy", "fonttools",
           "kiwisolver", "pillow", "statsmodels", "patsy", "formulaic", "numba", "llvmlite",
           "numba-cuda", "jax", "jaxlib", "ml-dtypes", "cupy-cuda12x")
#: Name prefixes of the CUDA toolkit's wheels (numba-cuda's and JAX's).
PRESENT_PREFIXES = ("nvidia-", "cuda-", "jax-cuda")
#: Left out unless ``--include``d: large, and needed by one corner of antiamp only.
OPTIONAL = {"pyarrow": "reading Parquet logs (antiamp.estimation.logs)"}
#: What tests/test_gpu.py needs beyond antiamp (the ranges are the test extra's).
CHECK_TOOLS = ("pytest", "pytest-xdist", "hypothesis")
#: Requirements published as a source archive only, built here into a pure-Python
#: wheel before resolving (hydra-core pins antlr4-python3-runtime 4.9.*).
SDIST_ONLY = ("antlr4-python3-runtime==4.9.*",)
#: Platforms of the default target: manylinux wheels for glibc 2.28 or later, x86_64.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: Packages whose versions ``install`` checks it left alone.
KEEP = ("numpy", "numba", "llvmlite", "numba-cuda", "scipy", "pandas")


def norm(name: str) -> str:
    """A distribution's normalised name (PEP 503): ``Foo_Bar.baz`` -> ``foo-bar-baz``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(filename: str) -> str:
    """The normalised distribution name of a wheel file."""
    return norm(Path(filename).name.split("-")[0])


def _req_name(req: str) -> str:
    return norm(re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0])


def project_requirements(pyproject: Path = ROOT / "pyproject.toml") -> dict:
    """``{"run": [...], "check": [...], "build": [...]}``: antiamp's dependencies, the
    test tools :data:`CHECK_TOOLS` with the test extra's ranges, the build backend."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise SystemExit("gpu_offline: download reads pyproject.toml, which needs Python "
                             ">= 3.11 (or the tomli package)")
    data = tomllib.loads(pyproject.read_text())
    test = data["project"]["optional-dependencies"]["test"]
    check = [r for r in test if _req_name(r) in CHECK_TOOLS]
    missing = set(CHECK_TOOLS) - {_req_name(r) for r in check}
    if missing:
        raise SystemExit(f"gpu_offline: the test extra no longer lists {sorted(missing)}")
    return {"run": list(data["project"]["dependencies"]), "check": check,
            "build": list(data["build-system"]["requires"])}


def read_freeze(path: Path) -> dict:
    """``{name: version}`` of a ``pip freeze`` file (``name==version`` lines; others,
    such as editable or direct-URL installs, count as present without a pin)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if "==" in line:
            name, ver = line.split("==", 1)
            out[norm(name)] = ver.strip()
        elif " @ " in line:
            out[norm(line.split(" @ ", 1)[0])] = None
    return out


def is_present(name: str, present: set) -> bool:
    return name in present or name.startswith(PRESENT_PREFIXES)


def _pip(*args: str, quiet: bool = True) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check"]
    if quiet:
        cmd.append("--quiet")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"gpu_offline: {' '.join(cmd[3:6])} ... failed:\n{res.stdout[-3000:]}"
                         f"\n{res.stderr[-3000:]}")
    return res


def _target_args(args) -> list:
    out = ["--only-binary=:all:", "--python-version", args.python_version]
    for p in args.platform or PLATFORMS:
        out += ["--platform", p]
    return out


def download(args) -> int:
    dest = Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    reqs = project_requirements()
    freeze = read_freeze(Path(args.freeze)) if args.freeze else {}
    include = {norm(n) for n in args.include}
    present = ({*map(norm, PRESENT), *freeze} | {norm(n) for n in args.present}) - include
    present |= {n for n in map(norm, OPTIONAL) if n not in include}
    wanted = [*reqs["run"], *reqs["check"], *reqs["build"], "pip"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # The source-only packages as pure-Python wheels, where the resolver finds them.
        for req in SDIST_ONLY:
            _pip("wheel", "--no-deps", "-w", str(dest), req)
        for whl in dest.glob("*.whl"):
            if wheel_name(whl.name) in map(_req_name, SDIST_ONLY) and \
                    not whl.name.endswith(("-py3-none-any.whl", "-py2.py3-none-any.whl")):
                raise SystemExit(f"gpu_offline: {whl.name} is not a pure-Python wheel")
        req_file = tmp / "requirements.txt"
        req_file.write_text("\n".join(wanted) + "\n")
        cons = []
        if freeze:  # the machine's versions, so that the wheels' dependencies fit them
            (tmp / "constraints.txt").write_text(
                "".join(f"{n}=={v}\n" for n, v in freeze.items() if v and n not in include))
            cons = ["-c", str(tmp / "constraints.txt")]
        report = tmp / "report.json"
        # The resolution for the target (package metadata only: no wheel is kept).
        _pip("install", "--dry-run", "--ignore-installed", "--report", str(report),
             "--target", str(tmp / "t"), "--find-links", str(dest), *_target_args(args),
             "-r", str(req_file), *cons)
        resolved = {norm(i["metadata"]["name"]): i["metadata"]["version"]
                    for i in json.loads(report.read_text())["install"]}
        chosen = {n: v for n, v in sorted(resolved.items()) if not is_present(n, present)}
        _pip("download", "--no-deps", "-d", str(dest), "--find-links", str(dest),
             *_target_args(args), *(f"{n}=={v}" for n, v in chosen.items()))
    wheels = {}
    for whl in sorted(dest.glob("*.whl")):
        name = wheel_name(whl.name)
        ver = whl.name.split("-")[1]
        if chosen.get(name) == ver:
            wheels[name] = whl.name
    lost = set(chosen) - set(wheels)
    if lost:
        raise SystemExit(f"gpu_offline: no wheel was saved for {sorted(lost)}")
    manifest = {
        "python_version": args.python_version,
        "platforms": list(args.platform or PLATFORMS),
        "requirements": [*reqs["run"], *reqs["check"]],
        "build": [*reqs["build"], "pip"],
        "wheels": [wheels[n] for n in sorted(wheels)],
        "left_out": sorted(n for n in resolved if n not in chosen),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    extra = sorted(w.name for w in dest.glob("*.whl") if w.name not in manifest["wheels"])
    if extra:
        print(f"gpu_offline: {len(extra)} other wheel(s) in {dest} are not in the manifest "
              f"(an earlier download?): {', '.join(extra)}")
    return show(dest, args.max_mib)


def show(dest: Path, max_mib: float = 0.0) -> int:
    """Print the manifest's wheels with their sizes; 1 if the total exceeds ``max_mib``."""
    manifest = load_manifest(dest)
    total = 0
    print(f"wheelhouse {dest}: CPython {manifest['python_version']}, "
          f"{', '.join(manifest['platforms'])}")
    for w in manifest["wheels"]:
        size = (dest / w).stat().st_size
        total += size
        print(f"  {size / 2**20:7.2f} MiB  {w}")
    print(f"  {total / 2**20:7.2f} MiB  in all, {len(manifest['wheels'])} wheels")
    print(f"left out (expected on the machine, or --include them): "
          f"{', '.join(manifest['left_out'])}")
    if max_mib and total > max_mib * 2**20:
        print(f"gpu_offline: the wheelhouse ({total / 2**20:.1f} MiB) exceeds --max-mib "
              f"{max_mib:g}", file=sys.stderr)
        return 1
    return 0


def load_manifest(dest: Path) -> dict:
    path = Path(dest) / MANIFEST
    if not path.is_file():
        raise SystemExit(f"gpu_offline: {path} not found: run `python benchmarks/gpu_offline.py "
                         "download` on a machine with a network first")
    return {**json.loads(path.read_text()), "_dir": str(Path(dest).resolve())}


def installed_versions(extra_paths=()) -> dict:
    """``{name: version}`` of the distributions this Python sees (and those in
    ``extra_paths``, such as an install target not yet on ``sys.path``)."""
    from importlib import metadata

    out = {}
    for dist in metadata.distributions(path=[*map(str, extra_paths), *sys.path]):
        name = dist.metadata["Name"]
        if name:
            out.setdefault(norm(name), dist.version)
    return out


def plan(manifest: dict, have: dict) -> list:
    """The manifest's wheels whose package is not installed, in manifest order."""
    return [w for w in manifest["wheels"] if wheel_name(w) not in have]


def pip_command(wheelhouse: Path) -> list:
    """This Python's pip, else the pip wheel of the wheelhouse (a wheel runs as a
    zip application: ``python pip-*.whl/pip``)."""
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    wheels = sorted(Path(wheelhouse).glob("pip-*.whl"))
    if not wheels:
        raise SystemExit("gpu_offline: this Python has no pip and the wheelhouse no pip wheel")
    return [sys.executable, str(wheels[-1] / "pip")]


def install_command(wheelhouse: Path, wheels: list, *, target=None, project=ROOT) -> list:
    """The ``pip install`` of ``wheels`` (file names in ``wheelhouse``) and of the
    project: no index, no dependencies (nothing else is resolved, upgraded or
    replaced), the wheelhouse as the only place a build requirement comes from."""
    cmd = ["install", "--no-index", "--find-links", str(wheelhouse), "--no-deps",
           "--disable-pip-version-check", "--no-warn-script-location"]
    if target is not None:
        # --upgrade replaces antiamp's own earlier copy in the target only: the other
        # wheels are missing by construction, and nothing outside DIR is touched.
        cmd += ["--target", str(target), "--upgrade"]
    return cmd + [str(Path(wheelhouse) / w) for w in wheels] + ([str(project)] if project else [])


def _offline_env() -> dict:
    """The environment of the offline pip: no configuration file and no PIP_* settings
    (an index or find-links set there must not be reached or mixed in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def install(args) -> int:
    wh = Path(args.wheelhouse).resolve()
    manifest = load_manifest(wh)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest["python_version"] != here:
        raise SystemExit(f"gpu_offline: the wheelhouse is for CPython "
                         f"{manifest['python_version']}, this is {here} ({sys.executable}): "
                         f"download again with --python-version {here}")
    target = Path(args.target).resolve() if args.target else None
    have = installed_versions([target] if target else [])
    todo = plan(manifest, have)
    print(f"gpu_offline: {len(manifest['wheels']) - len(todo)} of the wheelhouse's "
          f"{len(manifest['wheels'])} packages are installed already; installing "
          f"{len(todo)}{' and antiamp' if not args.no_project else ''}"
          f"{f' into {target}' if target else ''}:")
    for w in todo:
        print(f"  {w}")
    cmd = pip_command(wh) + install_command(wh, todo, target=target,
                                            project=None if args.no_project else ROOT)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    before = {n: have.get(n) for n in KEEP}
    if todo or not args.no_project:
        res = subprocess.run(cmd, env=_offline_env())
        if res.returncode != 0:
            print(f"gpu_offline: pip failed (exit {res.returncode})", file=sys.stderr)
            return res.returncode
    return verify(manifest, target, before)


def _requirement_class(manifest: dict, target):
    """packaging's ``Requirement``: installed, just installed into ``target``, pip's
    vendored copy, or the wheelhouse's pip wheel's; None if none is there."""
    if target:
        sys.path.insert(0, str(target))
    for mod in ("packaging.requirements", "pip._vendor.packaging.requirements"):
        try:
            return __import__(mod, fromlist=["Requirement"]).Requirement
        except ImportError:
            pass
    wheels = sorted(Path(manifest.get("_dir", ".")).glob("pip-*.whl"))
    if wheels:
        sys.path.append(str(wheels[-1]))  # a wheel is a zip: importable as it is
        try:
            from pip._vendor.packaging.requirements import Requirement
            return Requirement
        except ImportError:
            pass
    return None


def verify(manifest: dict, target, before: dict) -> int:
    """Each requirement's version against its range; the KEEP packages untouched;
    antiamp importable.  0 when antiamp imports and nothing was replaced."""
    Requirement = _requirement_class(manifest, target)
    have = installed_versions([target] if target else [])
    print("requirement                      found       ok")
    for req in manifest["requirements"]:
        name = _req_name(req)
        ver = have.get(name)
        if ver is None:
            why = OPTIONAL.get(name)
            ok = f"- (only {why} needs it)" if why else "NO (missing)"
        elif Requirement is None:
            ok = "? (no packaging library to compare versions)"
        else:
            ok = ("yes" if Requirement(req).specifier.contains(ver, prereleases=True)
                  else "NO (outside the range)")
        print(f"  {req:<30} {ver or 'missing':<11} {ok}")
    print(f"  (to build antiamp, from the wheelhouse in pip's isolated build environment: "
          f"{', '.join(manifest.get('build', []))})")
    changed = {n: (v, have.get(n)) for n, v in before.items() if v is not None and
               have.get(n) != v}
    for n, (old, new) in changed.items():
        print(f"gpu_offline: {n} changed from {old} to {new}", file=sys.stderr)
    env = dict(os.environ)
    if target:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target),
                                                          env.get("PYTHONPATH")]))
    res = subprocess.run([sys.executable, "-c", "import antiamp; print('antiamp', "
                          "antiamp.__version__, 'from', antiamp.__file__)"], env=env,
                         cwd=tempfile.gettempdir())
    if target:
        print(f"gpu_offline: export PYTHONPATH={target}:$PYTHONPATH PATH={target}/bin:$PATH")
    return 1 if res.returncode != 0 or changed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download", help="resolve and download the wheels (needs a network)")
    d.add_argument("--dest", default=str(ROOT / "wheelhouse"))
    d.add_argument("--python-version", default="3.12", help="the target's CPython (3.12)")
    d.add_argument("--platform", action="append",
                   help=f"a wheel platform tag of the target (repeat; {', '.join(PLATFORMS)})")
    d.add_argument("--freeze", help="the target's `pip freeze`: its packages are present")
    d.add_argument("--present", action="append", default=[],
                   help="a package the target has (repeat), beside the built-in list")
    d.add_argument("--include", action="append", default=[],
                   help="download this package even if it is expected present (repeat)")
    d.add_argument("--max-mib", type=float, default=40.0,
                   help="fail if the wheels exceed this many MiB (40)")
    i = sub.add_parser("install", help="install the missing wheels and antiamp (no network)")
    i.add_argument("--wheelhouse", default=str(ROOT / "wheelhouse"))
    i.add_argument("--target", help="install into this folder (then add it to PYTHONPATH)")
    i.add_argument("--no-project", action="store_true", help="the wheels only, not antiamp")
    i.add_argument("--dry-run", action="store_true", help="print the pip command only")
    ls = sub.add_parser("list", help="the wheelhouse's wheels and their sizes")
    ls.add_argument("--wheelhouse", default=str(ROOT / "wheelhouse"))
    ls.add_argument("--max-mib", type=float, default=0.0)
    args = ap.parse_args(argv)
    if args.cmd == "download":
        return download(args)
    if args.cmd == "install":
        return install(args)
    return show(Path(args.wheelhouse).resolve(), args.max_mib)


if __name__ == "__main__":
    sys.exit(main())
