"""With --try-fixes, a change it timed is advised only where it measured clearly faster; fewer
workers are offered only where the workers compute."""

from __future__ import annotations

from factories import evidence

from gpubottle.evidence import Trial, TrialsEvidence
from gpubottle.report import Finding, Fix
from gpubottle.rules.common import workers_compute
from gpubottle.rules.post.timed import without_timed_losers


def _finding() -> Finding:
    return Finding("preprocessing-bound", "warning", 0.4, "waits", fixes=[
        Fix("fewer workers: try it", where="train.py:42", change={"num_workers": [8, 2]}),
        Fix("prefetch deeper: try it", where="train.py:42", change={"prefetch_factor": [2, 4]}),
        Fix("cheaper samples", where="data.py:10")])


def test_a_try_that_measured_slower_or_in_the_noise_is_not_offered():
    ev = evidence(num_workers=8)
    ev.trials = TrialsEvidence(trials=[
        Trial({}, speedup=1.0), Trial({"num_workers": 2}, speedup=0.7, speedup_interval=[0.6, 0.8]),
        Trial({"prefetch_factor": 4}, speedup=1.01, speedup_interval=[0.97, 1.05])])
    [f] = without_timed_losers([_finding()], ev)
    assert [x.text for x in f.fixes] == ["cheaper samples"]
    ev.trials.trials[1] = Trial({"num_workers": 2}, speedup=1.3, speedup_interval=[1.2, 1.4])
    [f] = without_timed_losers([_finding()], ev)
    assert [x.change for x in f.fixes] == [{"num_workers": [8, 2]}, {}]
    assert without_timed_losers([_finding()], evidence(num_workers=8))[0].fixes == _finding().fixes


def test_workers_compute_when_their_cpu_fills_the_cores_not_when_they_wait():
    waiting = evidence(num_workers=8, per_worker=0.08, cores=2.0)
    assert not workers_compute(waiting, waiting.loaders[0])
    busy = evidence(num_workers=8, per_worker=0.22, cores=2.0)
    assert workers_compute(busy, busy.loaders[0])
