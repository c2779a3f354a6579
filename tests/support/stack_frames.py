"""Frames of torch's own code as py-spy reports them, for stacks built in tests: a DataLoader's
fetch in the main process (no workers) and a module's call."""

from __future__ import annotations

from gpubottle.analysis.stacks import Frame

TORCH = "/venv/lib/python3.11/site-packages/torch"
LOADER = [Frame("_BaseDataLoaderIter.__next__", f"{TORCH}/utils/data/dataloader.py", 733),
          Frame("_SingleProcessDataLoaderIter._next_data", f"{TORCH}/utils/data/dataloader.py", 789),
          Frame("_MapDatasetFetcher.fetch", f"{TORCH}/utils/data/_utils/fetch.py", 55)]
FORWARD = [Frame("Module._wrapped_call_impl", f"{TORCH}/nn/modules/module.py", 1778)]
