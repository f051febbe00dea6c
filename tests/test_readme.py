"""Every command the README and the guides show runs as printed (at a small size), so
that the documentation cannot drift from what the commands do.

The pages are README.md and the guides (``docs/guides/*.md``, in the order of
:data:`GUIDES`: a reader's order, since a later page may read what an earlier one
wrote).  Their shell blocks are read in order and each command is run in one
temporary directory (a later command may read what an earlier one wrote, as a reader
following the README would), with its instance counts made small
(``run.n_instances``, ``sweep.n_points``, ``--n-resamples``); a command the README
shows failing (``# antiamp-sweep: error: ...`` under it) must fail with that message
and exit status 2.  The Python blocks run as printed, each in a fresh interpreter.  A command that cannot run here is
listed in SKIP with the reason (and where it is tested instead); a new command in a
page that fits no rule fails :func:`test_every_readme_command_is_classified`, and a
guide missing from :data:`GUIDES` fails :func:`test_every_guide_is_run`.
The long shell commands (named sweeps, the estimators on the shipped logs) run with
``-m slow``.

A page's printed output (a plain block with a number in it) is checked line by line
against its command's output at the printed size, every digit as shown (PRINTED; a
plain block no entry claims fails :func:`test_every_printed_block_is_checked`), and a
failure the page shows is matched to its whole message.
"""

from __future__ import annotations

from limits import limit
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_command

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The guides whose commands and Python blocks run here, in the order they are run
#: (after the README's): each page's commands may read what the pages before wrote.
GUIDES = ["quickstart", "model", "sweeps", "equilibria", "signals", "extensions", "loop",
          "confidence", "redeliberation", "colmad", "mediation", "compare", "estimation",
          "design", "reproducibility", "layout", "own_model", "performance"]
PAGES = [README] + [ROOT / "docs" / "guides" / f"{g}.md" for g in GUIDES]

#: Commands the test does not run: (pattern, reason).
SKIP = [
    (r"^python3 -m venv ", "installs the package: the test suite runs from an installation"),
    (r"^pip install ", "installs extras; the benchmarks and the docs build are run on their own "
                       "(benchmarks/run_all.py, tests/test_docs.py)"),
    (r"^ANTIAMP_UNBOUNDED=1 ", "a day-long single cell, on purpose"),
    (r"executor=slurm|submitit_slurm", "needs a SLURM cluster (tests/test_slurm.py)"),
    (r"model=toy", "needs the toy plugin installed with pip (tests/test_plugin.py runs it)"),
    (r"^python docs/make_figures\.py", "redraws the documentation's figures (minutes)"),
    (r"our_keys\.yaml", "the reader's own Inspect logs and key mapping"),
    (r"run\.device=cuda", "needs an NVIDIA GPU (tests/test_gpu.py on one; tests/test_gpu_sim.py "
                          "runs the same kernels on numba's CUDA simulator)"),
    (r"^python benchmarks/gpu_offline\.py download", "downloads wheels (the network; "
                                                      "tests/test_gpu_check.py tests the rest)"),
    (r"^bash benchmarks/gpu_check\.sh", "needs a GPU machine (its --smoke runs on the simulator; "
                                        "tests/test_gpu_check.py tests its parts)"),
]

#: Commands run only with ``-m slow`` (seconds to minutes each on two cores).
SLOW = [r"\bsweep=\w", r"^antiamp-estimate\b", r"^antiamp-design\b", r"inspect_example",
        r"sweep\.design=(saltelli|morris)", r"^antiamp model=(confidence|loop|mediation|compare"
        r"|redeliberation|colmad)\b"]

SMALL_N = 2000
PROGS = ("antiamp", "antiamp-sweep", "antiamp-solve", "antiamp-ext", "antiamp-plot",
         "antiamp-estimate", "antiamp-design", "antiamp-check", "antiamp-merge")


def _where(page: Path, line: int) -> str:
    """``README.md:12``, ``guides/sweeps.md:40``: a command's page and line."""
    rel = page.relative_to(ROOT).as_posix()
    return f"{rel.removeprefix('docs/')}:{line}"


def _blocks(lang: str) -> list:
    """(where, text) of each fenced block in ``lang`` of every page, in order."""
    out = []
    for page in PAGES:
        text = page.read_text()
        out += [(_where(page, text[:m.start()].count("\n") + 2), m.group(1))
                for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)]
    return out


def _line(where: str, offset: int) -> str:
    page, line = where.rsplit(":", 1)
    return f"{page}:{int(line) + offset}"


def test_every_guide_is_run():
    """Every page of docs/guides/ is one whose commands this test runs."""
    on_disk = sorted(p.stem for p in (ROOT / "docs" / "guides").glob("*.md"))
    assert on_disk == sorted(GUIDES), set(on_disk) ^ set(GUIDES)


def commands() -> list:
    """(where, command, expected error or None) of every shell command, in order."""
    out = []
    for line0, body in _blocks("bash"):
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            start, cmd = _line(line0, i), lines[i]
            while cmd.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            cmd = cmd.strip()
            if not cmd or cmd.startswith("#"):
                continue
            expect = None
            if i < len(lines) and re.match(r"^# [\w-]+: error: ", lines[i].strip()):
                expect = lines[i].strip()[2:]  # the whole message, ``...`` for text left out
            # a trailing comment (``# a named sweep``) is not part of the command
            words = shlex.split(cmd, comments=True)
            out.append((start, words, expect))
    # A command shown twice runs where it is shown last: ``antiamp-estimate logs/``
    # first stands for the reader's own logs, then follows the example that writes them.
    last = {tuple(w): k for k, (_, w, _) in enumerate(out)}
    return [c for k, c in enumerate(out) if last[tuple(c[1])] == k]


def _match(patterns, text: str) -> bool:
    return any(re.search(p, text) for p in patterns)


def skipped(words: list) -> str | None:
    text = " ".join(words)
    for pat, why in SKIP:
        if re.search(pat, text):
            return why
    return None


def small(words: list, expect) -> list:
    """The command at a small size (a command shown failing runs as printed)."""
    if expect is not None:
        return list(words)
    prog, args = words[0], list(words[1:])
    if prog in ("antiamp", "antiamp-sweep", "antiamp-solve", "antiamp-ext"):
        args = [a for a in args if not a.startswith("run.n_instances=")]
        args.append(f"run.n_instances={SMALL_N}")
        args = [re.sub(r"^sweep\.n_points=\d+$", "sweep.n_points=8", a) for a in args]
        if prog == "antiamp-sweep" and not any(a.startswith("sweep.plot") for a in args):
            args.append("sweep.plot=true")
    if prog == "antiamp-estimate" and "--n-resamples" not in args:
        args += ["--n-resamples", "50"]
    return [prog, *args]


def _cases(slow: bool):
    return [pytest.param(line, words, expect, id=line)
            for line, words, expect in commands()
            if skipped(words) is None and _match(SLOW, " ".join(words)) == slow]


def test_every_readme_command_is_classified():
    """Each command is one of antiamp's, a ``python`` one, or skipped for a reason."""
    seen = commands()
    assert len(seen) > 40, "the README's shell blocks were not found"
    for line, words, expect in seen:
        if skipped(words) is not None:
            continue
        assert words[0] in PROGS or words[:2] in (["python", "-c"], ["python", "-m"]), (
            f"{line}: {' '.join(words)}: not a command this test runs; "
            "add a rule to SKIP (with the reason) or teach the test to run it")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One directory for the README's commands, run in order (later ones read the
    outputs of earlier ones)."""
    return tmp_path_factory.mktemp("readme")


def _run(words: list, cwd: Path) -> subprocess.CompletedProcess:
    if words[0] == "python":
        return subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True,
                              text=True, timeout=limit(900))
    return run_command(words[0], words[1:], cwd)


def _check(line: int, words: list, expect, cwd: Path) -> None:
    r = _run(small(words, expect), cwd)
    shown = f"{line}: {' '.join(words)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    if expect is not None:
        assert r.returncode == 2, shown
        assert _shown(expect).search(r.stderr), shown  # every digit shown, as printed
        return
    assert r.returncode == 0, shown
    assert "Traceback" not in r.stderr, shown


@pytest.mark.xdist_group("readme")  # one worker, in the README's order
@pytest.mark.parametrize("line,words,expect", _cases(slow=False))
def test_readme_command(line, words, expect, workdir):
    _check(line, words, expect, workdir)


@pytest.mark.slow
@pytest.mark.xdist_group("readme")
@pytest.mark.parametrize("line,words,expect", _cases(slow=True))
def test_readme_command_slow(line, words, expect, workdir):
    _check(line, words, expect, workdir)


# ----------------------------------------------------------------------------- Python
#: Python blocks not run: (text in the block, reason).
PY_SKIP = [("Task(dataset=...", "a fragment of an Inspect task (tests/test_inspect.py)"),
           ('check_model("toy"', "needs the toy plugin installed (tests/test_plugin.py)")]


def python_blocks() -> list:
    return [(line, body) for line, body in _blocks("python")
            if not any(key in body for key, _ in PY_SKIP)]


def _as_printed(body: str) -> str:
    # a block after the first reads ``antiamp`` as the first imported it
    return "import antiamp\n" + body


@pytest.mark.parametrize("line,body", [pytest.param(*b, id=b[0])
                                       for b in python_blocks()])
def test_readme_python_block(line, body, tmp_path):
    r = subprocess.run([sys.executable, "-c", _as_printed(body)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=limit(900))
    assert r.returncode == 0, f"{line}:\n{body}\n{r.stdout[-2000:]}{r.stderr[-3000:]}"


# ----------------------------------------------------------------------------- numbers
@pytest.mark.xdist_group("printed")  # the estimator's run is the printed examples' one
def test_the_human_log_numbers_in_the_readme_are_what_prints(printed_dir):
    """The intervals and p-value the estimation guide quotes for the shipped human-judge
    log are the pooled lines of ``antiamp-estimate --sample human_judges`` (``stratum
    all:``, or the log's only stratum; the run with ``--simulate`` prints the same lines
    first, and is the one the guide's printed blocks need)."""
    text = " ".join((ROOT / "docs" / "guides" / "estimation.md").read_text().split())
    m = re.search(r"Amp (0\.\d+) \[(0\.\d+), (0\.\d+)\] in consultancy against "
                  r"(0\.\d+) \[(0\.\d+), (0\.\d+)\] in debate \(role-symmetric; one-sided "
                  r"p = (0\.\d+)", text)
    assert m, "the estimation guide's human-log sentence was not found"
    stdout = _printed_run(printed_dir, ("antiamp-estimate --sample human_judges --simulate",))
    # the pooled lines: ``stratum all:``, or a log's only stratum (printed alone)
    m_all = re.search(r"^stratum (all|\S+ \(the only one: every row\)):\n(.*?)\n\n", stdout,
                      re.S | re.M)
    assert m_all, stdout
    pooled = m_all.group(2)
    rows = {p: re.search(rf"{p}\s+n=.*?Amp (\S+) \[(\S+), (\S+)\]", pooled).groups()
            for p in ("consult", "debate")}
    p = float(re.search(r"one-sided p = (\S+)", pooled).group(1))
    shown = [round(float(v), 3) for v in rows["consult"] + rows["debate"]]
    assert shown == [float(v) for v in m.groups()[:6]], (shown, m.groups())
    assert round(p, 3) == float(m.group(7)), (p, m.group(7))


def test_the_inspect_example_numbers_in_the_guide_are_what_prints(tmp_path):
    """The estimation guide's sentence on the Inspect example (10 replicates, 480 samples)
    quotes Inspect's report (its metrics to four decimals, as Inspect shows them) and
    ``antiamp-estimate logs/``'s Amp intervals: each as the example at that size gives
    it, every digit (about 25 s of CPU: the evaluation and the estimator's bootstrap)."""
    pytest.importorskip("inspect_ai")
    from antiamp.estimation.inspect_example import run_example

    text = " ".join((ROOT / "docs" / "guides" / "estimation.md").read_text().split())
    num = r"(\d\.\d+)"
    m = re.search(rf"On (\d+) replicates of each question \((\d+) samples[,;] [^)]*\) Inspect's "
                  rf"report shows `amp_consult {num}`, `amp_consult_stderr {num}`, `amp_debate "
                  rf"{num}`, `amp_debate_stderr {num}`, and `antiamp-estimate logs/` reports "
                  rf"the same Amp with its bootstrap intervals \(\[{num}, {num}\] and "
                  rf"\[{num}, {num}\]\)", text)
    assert m, "the estimation guide's Inspect example sentence was not found"
    log = run_example(tmp_path / "logs", replicates=int(m.group(1)))  # the command's defaults
    assert log.status == "success" and len(log.samples) == int(m.group(2)), log.status
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    shown = dict(zip(("amp_consult", "amp_consult_stderr", "amp_debate", "amp_debate_stderr"),
                     m.groups()[2:6]))
    for k, v in shown.items():  # Inspect shows a metric rounded to four decimals
        assert f"{round(metrics[k], 4):g}" == f"{float(v):g}", (k, metrics[k], v)
    r = run_command("antiamp-estimate", ["logs/"], tmp_path)
    assert r.returncode == 0, r.stderr
    for prot, (amp, lo, hi) in (("consult", (shown["amp_consult"], *m.groups()[6:8])),
                                ("debate", (shown["amp_debate"], *m.groups()[8:10]))):
        line = re.search(rf"^  {prot} +n=.*?Amp (\S+) \[(\S+), (\S+)\]", r.stdout, re.M)
        assert line, r.stdout
        assert float(line.group(1)) == float(amp) and line.group(2, 3) == (lo, hi), (
            prot, line.group(0), (amp, lo, hi))


#: Blocks of printed output in the pages, each checked against its command's output at
#: the printed size: (page, the start of the block's first line other than ``...``, the
#: commands run in order in one directory: the block shows the last one's output).
#: Every plain block of the pages with a digit in it is one of these
#: (:func:`test_every_printed_block_is_checked`).  All of them together take about 25 s
#: of CPU (the estimator and the design on the shipped human-judge log, the sample at
#: 3,000 rows a protocol, a 6 x 6 sweep and its PRIM boxes), so they run in the default
#: tier; a heavier one would go to a ``slow`` twin of the test.
PRINTED = [
    ("guides/sweeps.md", "$ antiamp-discover",
     ("antiamp-sweep sweep=amp_gap sweep.name=amp_gap_6x6 run.n_instances=20000"
      " 'sweep.axes.model.rho={linspace:[0,1,6]}' 'sweep.axes.judge.b={linspace:[0,1,6]}'",
      'antiamp-discover outputs/sweeps/amp_gap_6x6/sweep.zarr --where "amp_gap < 0.1"'
      " --boxes 2")),
    ("guides/estimation.md", "which reading of the log predicts",
     ("antiamp-estimate --sample human_judges --simulate",)),
    ("guides/estimation.md", "predictions per population",
     ("antiamp-estimate --sample human_judges --simulate",)),
    ("guides/estimation.md", "stratum all:",
     ("antiamp-estimate --sample --simulate --mislabel 0.02",)),
    ("guides/design.md", "antiamp-design ",
     ("antiamp-estimate --sample human_judges --simulate",
      "antiamp-design --estimates outputs/estimates/michael2023_human_judges/estimates.zarr"
      " --rules majority,two_thirds,unanimous --min-acc 0.8")),
]


def output_blocks() -> list:
    """(page, line, text before, lines) of every plain block (no language, ``text`` or
    ``console``) with a digit in it, in README.md and the guides."""
    out = []
    for path in PAGES:
        text = path.read_text()
        page = path.relative_to(ROOT).as_posix().removeprefix("docs/")
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            if m.group(1) in ("", "text", "console") and re.search(r"\d", m.group(2)):
                out.append((page, text[:m.start()].count("\n") + 1, text[:m.start()],
                            m.group(2).splitlines()))
    return out


def printed_output(page: str, first: str, commands: tuple) -> list:
    """The lines ``page`` prints as the output of the last of ``commands``: the plain block
    whose first line other than ``...`` starts with ``first``, every command shown before
    it (in a bash block or the text just before, words joined over lines), the last
    one either there or on the block's own ``$`` line."""
    found = [(line, before, lines) for p, line, before, lines in output_blocks()
             if p == page and [ln for ln in lines if ln.strip() != "..."][0].startswith(first)]
    assert len(found) == 1, f"{page}: {len(found)} printed blocks start with {first!r}"
    line, before, lines = found[0]
    said = [ln[2:] for ln in lines if ln.startswith("$ ")]
    if said:  # the block shows its command: the one run
        assert said == [commands[-1]], (page, line, said, commands[-1])
    near = " ".join(before[-1000:].replace("\\\n", " ").replace("`", "").split())
    for cmd in commands[:-1] if said else commands:
        assert " ".join(cmd.split()) in near, f"{page}:{line}: {cmd!r} is not shown before"
    return [ln for ln in lines if not ln.startswith("$ ")]


def _shown(line: str) -> re.Pattern:
    """A shown line as a pattern: ``...`` within it stands for text left out; every
    other character, each digit included, must be printed as shown."""
    return re.compile(".*?".join(re.escape(p) for p in line.rstrip().split("...")))


def compare_printed(shown: list, printed: str) -> None:
    """Each line shown is a whole line of ``printed``, in order (``...`` alone on a line:
    lines left out)."""
    out = [ln.rstrip() for ln in printed.splitlines()]
    at = 0
    for ln in shown:
        if ln.strip() == "...":
            continue
        pat = _shown(ln)
        k = next((k for k in range(at, len(out)) if pat.fullmatch(out[k])), None)
        assert k is not None, f"shown {ln!r}, not printed (after line {at}):\n{printed}"
        at = k + 1


@pytest.fixture(scope="module")
def printed_dir(tmp_path_factory):
    """One directory for the printed examples' commands, each run once (the design's
    example reads the store the estimation's wrote), with what each printed."""
    return tmp_path_factory.mktemp("printed"), {}


def _printed_run(printed_dir, commands: tuple) -> str:
    cwd, ran = printed_dir
    for cmd in commands:
        if cmd not in ran:
            words = shlex.split(cmd)
            r = run_command(words[0], words[1:], cwd)
            assert r.returncode == 0, f"{cmd}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
            ran[cmd] = r.stdout
    return ran[commands[-1]]


@pytest.mark.xdist_group("printed")  # one worker: the design reads the estimator's store
@pytest.mark.parametrize("page,first,commands",
                         [pytest.param(*c, id=f"{c[0]}:{c[1].strip()}") for c in PRINTED])
def test_a_printed_output_is_what_the_command_prints(page, first, commands, printed_dir):
    """Each line of a printed output is a line of the command's output at the printed
    size, in order, every digit as shown (the estimation guide showed p = 3.28e-34 where
    the command printed 3.84e-33; the design guide's first two lines were an older
    wording)."""
    shown = printed_output(page, first, commands)
    compare_printed(shown, _printed_run(printed_dir, commands))


def test_every_printed_block_is_checked():
    """Every plain block with a number in README.md and the guides is a command's output
    that PRINTED checks, and each of PRINTED finds its block and its command shown
    (cheap: no command run)."""
    claimed = {}
    for page, first, commands in PRINTED:
        assert [ln for ln in printed_output(page, first, commands) if ln.strip() != "..."]
        claimed[page, first] = True
    for page, line, _, lines in output_blocks():
        head = [ln for ln in lines if ln.strip() != "..."][0]
        assert any(p == page and head.startswith(f) for p, f in claimed), (
            f"{page}:{line}: a printed block no test checks ({head[:60]!r}); add it to PRINTED")


def test_a_changed_digit_fails_the_comparison():
    """The comparison is digit for digit: one digit changed in a shown line fails."""
    printed = "x\n  consult  Amp 0.7138 [0.6780, 0.7500]\ny (about 3.17 years at 1e+08)\n"
    compare_printed(["...", "  consult  Amp 0.7138 [0.6780, 0.7500]", "y (about 3.17 years ...)"],
                    printed)
    for wrong in ("  consult  Amp 0.7139 [0.6780, 0.7500]", "y (about 3.18 years ...)"):
        with pytest.raises(AssertionError, match="not printed"):
            compare_printed([wrong], printed)


# ----------------------------------------------------------------------------- the table
VALIDATE = """
import shlex, sys
from antiamp.cli import prevalidate as cell, setup as cell_setup
from antiamp.sweeps.cli import prevalidate as grid, setup as grid_setup
cell_setup(); grid_setup()
for line in sys.argv[1:]:
    argv = shlex.split(line)
    try:
        (cell if argv[0] == "antiamp" else grid)(argv[1:])
    except Exception as exc:
        sys.exit(f"{line}: {type(exc).__name__}: {exc}")
print(len(sys.argv) - 1)
"""


def test_the_commands_of_the_readme_table_validate(tmp_path):
    """The one-cell and grid commands of the README's table of models compose and
    validate as printed (the commands' own checks before a run; the guides and the
    model pages run them)."""
    rows = [ln for ln in README.read_text().splitlines() if ln.startswith("| [`")]
    assert len(rows) >= 10, rows
    table = [c for ln in rows for c in re.findall(r"`(antiamp(?:-sweep)? [^`]+)`", ln)]
    assert len(table) == 2 * len(rows), table  # a cell and a grid for every model
    r = subprocess.run([sys.executable, "-c", VALIDATE, *table], cwd=tmp_path,
                       capture_output=True, text=True, timeout=limit(600))
    assert r.returncode == 0, r.stderr[-4000:]
    assert int(r.stdout.split()[-1]) == len(table)
