"""The supervisor's own CPU, held against the collectors' budget in 5-s spans (launch/collectors.py),
on a made-up clock and made-up readings of this process's CPU."""

from __future__ import annotations

from gpubottle.launch import collectors as collectors_module
from gpubottle.launch.collectors import OWN_SPAN_S, Collectors
from gpubottle.rundir import RunDir


def test_the_supervisors_cpu_is_recorded_each_span(tmp_path, monkeypatch):
    readings = iter([1.00, 1.01, 1.03, 1.05])  # this process's CPU seconds at each look
    monkeypatch.setattr(collectors_module, "_cpu_clock", lambda: next(readings))
    c = Collectors(RunDir(str(tmp_path)), 0.2, stacks=False, gpu=False)
    c._own_cpu(100.0)  # the first reading: nothing to record yet
    assert "gpubottle" not in c.budget._spans
    c._own_cpu(100.0 + OWN_SPAN_S / 2)  # within the span: read, not recorded
    assert "gpubottle" not in c.budget._spans
    c._own_cpu(100.0 + OWN_SPAN_S)
    t0, t1, cpu = c.budget._spans["gpubottle"]
    assert (t0, t1, round(cpu, 3)) == (100.0, 100.0 + OWN_SPAN_S, 0.03)
    c._own_cpu(100.0 + 2 * OWN_SPAN_S)
    assert round(c.budget._spans["gpubottle"][2], 3) == 0.02


def test_a_span_ends_where_the_early_budget_does(tmp_path, monkeypatch):
    """The supervisor samples faster in the first 15 s: its span across the early budget's end is
    closed there, so the late budget soon sees what it costs at its late rates."""
    readings = iter([1.00, 1.02, 1.021])
    monkeypatch.setattr(collectors_module, "_cpu_clock", lambda: next(readings))
    c = Collectors(RunDir(str(tmp_path)), 0.2, stacks=False, gpu=False)
    edge = c.budget.early_end
    c._own_cpu(edge - 2.0)
    c._own_cpu(edge + 0.3)  # 2.3 s in: closed at the edge's first look, not 5 s in
    assert c.budget._spans["gpubottle"][:2] == (edge - 2.0, edge + 0.3)
    c._own_cpu(edge + 0.3 + OWN_SPAN_S)
    assert round(c.budget._spans["gpubottle"][2], 3) == 0.001
