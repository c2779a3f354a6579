"""The probe times this CPU on subnormal float32 values once, at the first look that finds some
(probes/subnormals.py): a ratio against normal values that agrees with the test's own measure on
which side of a real penalty it lies, and leaves torch's thread setting as it was."""

from __future__ import annotations

import torch
from cpu_traits import SUBNORMAL_SLOW, subnormal_penalty

from gpubottle.probes.subnormals import subnormal_penalty as probe_penalty


def test_the_probe_times_this_cpu_as_the_tests_do() -> None:
    threads = torch.get_num_threads()
    ratio = probe_penalty()
    assert ratio is not None and ratio > 0
    theirs = subnormal_penalty()
    if theirs < SUBNORMAL_SLOW * 0.8 or theirs > SUBNORMAL_SLOW * 1.5:  # (clearly on one side)
        assert (ratio >= SUBNORMAL_SLOW) == (theirs >= SUBNORMAL_SLOW), (ratio, theirs)
    assert torch.get_num_threads() == threads
