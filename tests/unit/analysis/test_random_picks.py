"""A line that shuffles or sorts every value to keep a few (analysis/random_picks.py):
np.random.choice(N, k, replace=False), randperm(N)[:k], np.argsort(x)[-k:]; read from the source.
Calls that do not touch all N (a Generator's choice, randint, a choice with replacement, a slice
of a permutation made before) are not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.random_picks import shuffles_to_pick, sorts_to_pick
from gpubottle.analysis.source_kinds import shuffle_kind
from gpubottle.analysis.work_kinds import SHUFFLE_TO_PICK, SORT_TO_PICK, remedy, wasted

SOURCE = """import numpy as np
import torch
idx = np.random.choice(N, 256, replace=False)
idx = numpy.random.choice(N, 256, False)
idx = torch.randperm(N)[:256]
idx = np.random.permutation(N)[:k]
idx = np.random.choice(N, 256)
idx = rng.choice(N, 256, replace=False)
idx = torch.randint(N, (256,))
idx = perm[i * 256:(i + 1) * 256]
hard = np.argsort(scores)[-256:]
low = sorted(losses)[:10]
top = torch.topk(s, 5).indices
mid = np.argsort(scores)[10:20]
order = np.argsort(scores)
"""


def test_shuffles_and_sorts_of_everything_to_keep_a_few_are_found(tmp_path: Path) -> None:
    path = tmp_path / "loop.py"
    path.write_text(SOURCE)
    p = str(path)
    assert [shuffles_to_pick(p, n) for n in range(3, 11)] == [True, True, True, True,
                                                              False, False, False, False]
    assert [sorts_to_pick(p, n) for n in range(11, 16)] == [True, True, False, False, False]
    assert shuffle_kind(p, 3) == SHUFFLE_TO_PICK and shuffle_kind(p, 11) == SORT_TO_PICK
    assert shuffle_kind(p, 15) is None and not shuffles_to_pick(str(tmp_path / "none.py"), 3)


def test_their_remedies_remove_the_work() -> None:
    assert wasted(SHUFFLE_TO_PICK) and "perm[i * k:(i + 1) * k]" in (remedy(SHUFFLE_TO_PICK) or "")
    assert wasted(SORT_TO_PICK) and "torch.topk(x, k)" in (remedy(SORT_TO_PICK) or "")
