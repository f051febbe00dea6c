"""Progress of a sweep's blocks: a bar on a terminal, lines in a log otherwise.

A sweep run with its output redirected (a batch job, ``nohup``, a CI log) gets no
progress bar; instead a line every :data:`LOG_EVERY_SECONDS` says how many blocks
and cells are done, the rate and the time left, so that its log shows it is
running.  ``progress=True`` forces the bar, ``progress=False`` silences both.
"""

from __future__ import annotations

import time

#: Seconds between two progress lines of a sweep whose output is not a terminal.
LOG_EVERY_SECONDS = 30.0


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Blocks done out of ``blocks`` (``cells`` cells in all).

    ``progress``: True a bar, False nothing, None a bar on a terminal (or in a
    notebook) and otherwise a line to ``log`` every :data:`LOG_EVERY_SECONDS`."""

    def __init__(self, blocks: int, cells: int, desc: str, progress: bool | None = None,
                 log=print):
        from antiamp.runner import interactive, tqdm_class

        self.blocks, self.cells, self.desc, self.log = blocks, cells, desc, log
        show = interactive() if progress is None else bool(progress)
        self.lines = progress is None and not show
        self.bar = tqdm_class()(total=cells, unit="cell", desc=desc, disable=not show)
        self.n_blocks = self.n_cells = 0
        self.t0 = self.last = time.monotonic()
        self.logged = False

    def update(self, cells: int, postfix: str | None = None) -> None:
        self.n_blocks += 1
        self.n_cells += cells
        self.bar.update(cells)
        if postfix is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
        now = time.monotonic()
        if self.lines and now - self.last >= LOG_EVERY_SECONDS and self.n_cells < self.cells:
            self.last = now
            self._line(now)

    def _line(self, now: float) -> None:
        took = max(now - self.t0, 1e-9)
        rate = self.n_blocks / took
        left = (self.blocks - self.n_blocks) / rate if rate > 0 else float("inf")
        self.log(f"{self.desc}: {self.n_blocks:,} of {self.blocks:,} blocks done "
                 f"({self.n_cells:,} of {self.cells:,} cells, "
                 f"{100 * self.n_cells / max(self.cells, 1):.0f}%) in {_duration(took)}, "
                 f"{rate:,.2f} blocks/s, about {_duration(left)} left")
        self.logged = True

    def close(self) -> None:
        self.bar.close()
        if self.logged and self.n_blocks == self.blocks:
            self.log(f"{self.desc}: all {self.blocks:,} blocks done in "
                     f"{_duration(time.monotonic() - self.t0)}")
