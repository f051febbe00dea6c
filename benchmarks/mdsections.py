"""Sections of BENCHMARKS.md that ``run_all.py`` does not write, kept across its reruns.

A few sections come from commands ``run_all.py`` cannot run on every machine (the GPU
kernels' machine-code report needs ``.[gpu]``; the GPU tables need a GPU): each states
its own command and date.  A rerun of ``run_all.py`` regenerates every section it writes
and carries the others over as they are, where they stood: a ``##`` section after the
section it followed (and after the sections new to this run that follow that one), a
``###`` subsection at the end of its ``##`` section.
"""

from __future__ import annotations


def _split(text: str) -> tuple[list, list]:
    """(preamble lines, [[h2 line, body lines, [[h3 line, lines], ...]], ...])."""
    pre: list = []
    secs: list = []
    for line in text.splitlines():
        if line.startswith("## "):
            secs.append([line, [], []])
        elif line.startswith("### ") and secs:
            secs[-1][2].append([line, []])
        elif not secs:
            pre.append(line)
        elif secs[-1][2]:
            secs[-1][2][-1][1].append(line)
        else:
            secs[-1][1].append(line)
    return pre, secs


def _join(pre: list, secs: list) -> str:
    out = list(pre)
    for h2, body, subs in secs:
        out += [h2] + body
        for h3, lines in subs:
            out += [h3] + lines
    return "\n".join(out) + "\n"


def keep_sections(new: str, old: str) -> tuple[str, list]:
    """``new`` with the sections of ``old`` it lacks carried over; and their headings."""
    pre, secs = _split(new)
    _, old_secs = _split(old)
    have = {s[0]: s for s in secs}
    old_heads = {s[0] for s in old_secs}
    kept = []
    after = None  # the last h2 of ``old`` that ``new`` has
    for h2, body, subs in old_secs:
        if h2 in have:
            mine = have[h2]
            titles = {h for h, _ in mine[2]}
            for h3, lines in subs:
                if h3 not in titles:
                    mine[2].append([h3, lines])
                    kept.append(h3)
            after = h2
            continue
        at = (secs.index(have[after]) + 1) if after is not None else 0
        while at < len(secs) and secs[at][0] not in old_heads:
            at += 1  # past sections new to this run that follow the same anchor
        block = [h2, body, subs]
        secs.insert(at, block)
        have[h2] = block
        kept.append(h2)
        after = h2
    return _join(pre, secs), kept
