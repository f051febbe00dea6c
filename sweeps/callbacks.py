"""Hydra callback: merge the stores of a multirun when it ends."""

from __future__ import annotations

import logging
from pathlib import Path

from hydra.experimental.callback import Callback

log = logging.getLogger("antiamp")


class MergeStores(Callback):
    """After ``antiamp-sweep -m ...``, write ``<sweep dir>/merged.zarr`` from the jobs' stores."""

    def on_multirun_end(self, config, **kwargs) -> None:
        from antiamp.outputs_policy import OutputError, release_outputs

        from .merge import MergeError, merge_stores

        sweep_dir = Path(config.hydra.sweep.dir)
        try:
            merge_stores([sweep_dir], sweep_dir / "merged.zarr")
        except (MergeError, OutputError) as exc:
            log.warning("stores not merged: %s", exc)
            return
        finally:
            release_outputs()  # the merged store's lock
        log.info("merged the jobs' stores into %s", sweep_dir / "merged.zarr")
