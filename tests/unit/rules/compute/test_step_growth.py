"""rules/compute/growth.py: steps that take longer as the run goes, named at the growing line."""

from __future__ import annotations

import dataclasses

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.analysis.growth import HISTORY, LIST_FRONT, SELF_CONCAT
from gpubottle.evidence import StepGrowth
from gpubottle.rules.compute.growth import slowing_steps
from gpubottle.rules.engine import diagnose

GROWTH = StepGrowth(first_s=0.001, last_s=0.006, per_step_s=2.7e-6, base_s=0.0008, rho=0.97,
                    by_epoch=False, steps=1875, extra_s=4.7, training_s=7.5, function="<module>",
                    location="cat_grow.py:19", kind=SELF_CONCAT, line_share=0.93,
                    statement="all_logits = torch.cat([all_logits, out.detach()])")


def _ev(growth: StepGrowth | None, run_s: float = 10.0):
    ev = evidence(steps=200, step_s=0.004)
    ev.run.duration_s = run_s
    ev.step_growth = growth
    return ev


def test_a_concatenation_onto_itself_is_named_with_the_run_at_the_first_pace() -> None:
    [f] = slowing_steps(_ev(GROWTH))
    assert f.category == v.LOOP_OVERHEAD and f.severity == "critical"
    assert f.share == round(4.7 / 7.5, 4) and f.run_share == 0.47
    assert "cat_grow.py:19" in f.summary and "1.0 ms -> 6.0 ms" in f.summary
    [fix] = f.fixes
    assert fix.where == "cat_grow.py:19" and "torch.cat the list once" in fix.text
    # The line's part of the growth goes (93% of it here), not all of it: what the rest is (a larger
    # buffer sampled at random, scattered in memory) stays (replay_list.py: 1.47x predicted whole,
    # 1.09-1.17x measured, its line 66% of the growth).
    assert fix.expected_run_s == round(10.0 - 4.7 * 0.93, 3) and "try it" not in fix.text
    assert fix.expected is not None and fix.expected.endswith("less this line's part (93%)")
    [whole] = slowing_steps(_ev(dataclasses.replace(GROWTH, line_share=1.0)))[0].fixes
    assert whole.expected_run_s == 5.3 and (whole.expected or "").endswith("at the first steps' pace")


def test_a_reduction_over_a_kept_list_is_offered_a_running_value_at_the_loops_call() -> None:
    g = dataclasses.replace(GROWTH, function="log_metrics", location="train.py:12",
                            called_at="train.py:40", kind=HISTORY, statement="avg = np.mean(losses)")
    [f] = slowing_steps(_ev(g))
    [fix] = f.fixes
    assert fix.where == "train.py:40" and "running total" in fix.text


def test_a_lists_front_taken_off_is_offered_a_ring_buffer() -> None:
    g = dataclasses.replace(GROWTH, location="dqn.py:17", kind=LIST_FRONT, statement="buffer.pop(0)")
    [f] = slowing_steps(_ev(g))
    [fix] = f.fixes
    assert fix.where == "dqn.py:17" and fix.text.startswith("`buffer.pop(0)` (dqn.py:17) takes values")
    assert "ring buffer" in fix.text and "i = (i + 1) % N" in fix.text


def test_growth_of_unknown_kind_is_a_try_and_without_a_line_a_fact_with_no_fix() -> None:
    [f] = slowing_steps(_ev(dataclasses.replace(GROWTH, kind=None)))
    assert "try it and time it" in f.fixes[0].text and f.fixes[0].where == "cat_grow.py:19"
    assert "`all_logits = torch.cat([all_logits, out.detach()])`" in f.fixes[0].text
    for g in (dataclasses.replace(GROWTH, kind=None, line_share=0.4),  # the line not its cause
              dataclasses.replace(GROWTH, line_share=0.2),  # nor here, whatever its text says
              dataclasses.replace(GROWTH, location=None, line_share=None)):  # no line (the model's)
        [f] = slowing_steps(_ev(g))
        assert f.fixes == [] and f.severity == "info" and "cat_grow.py:19" not in f.summary
        assert f.open_question and "longer sequences" in f.open_question


def test_growth_of_unknown_kind_beside_a_fragmenting_heap_names_the_allocator_first() -> None:
    """A DQN's steps 4.7 -> 8.8 ms while glibc's heap fragmented, a steady 3.9 ms with jemalloc
    (the same code): its slowest line makes the step's tensors. Said as slowing while the heap
    fragments, the allocator's fix first; a line of a known kind keeps its own remedy."""
    from gpubottle.evidence import HeapGrowth, MemoryEvidence

    def ev(g: StepGrowth):
        e = _ev(g)
        e.memory = MemoryEvidence(
            samples=100, total_bytes=16 << 30, limit_bytes=16 << 30, peak_used_fraction=0.4,
            growth_bytes_per_s=300 << 20, growth_r2=0.99, projected_exhaustion_s=60.0,
            series=[[float(t), 0.0, 0.0] for t in range(100)],
            heap=HeapGrowth(5.0, 600, 1500 << 20, 1480 << 20, 20 << 20, 2 << 30, 2 << 30))
        return e

    [f] = slowing_steps(ev(dataclasses.replace(GROWTH, kind=None)))
    assert "slows most at cat_grow.py:19 while malloc's heap fragments" in f.summary
    assert "in proportion to what it has done" not in f.summary
    assert "apply that finding's allocator fix first" in f.fixes[0].text
    [f] = slowing_steps(ev(GROWTH))
    assert "torch.cat the list once" in f.fixes[0].text and "heap" not in f.summary


def test_a_line_whose_text_says_what_grows_is_named_on_a_smaller_share() -> None:
    """Beside a loaded machine the late steps' samples spread over lines that waited for a core:
    the cat line's text is evidence of its own, so 30% of the growth names it; an unknown line
    needs half."""
    [f] = slowing_steps(_ev(dataclasses.replace(GROWTH, line_share=0.3)))
    assert f.fixes and "cat_grow.py:19" in f.summary
    [f] = slowing_steps(_ev(dataclasses.replace(GROWTH, kind=None, line_share=0.3)))
    assert f.fixes == []


def test_unexplained_growth_beside_other_programs_is_left_to_cpu_contention() -> None:
    ev = _ev(dataclasses.replace(GROWTH, location=None, line_share=None))
    assert ev.cpu is not None
    ev.cpu.outside_cores = 0.9
    assert slowing_steps(ev) == []
    ev.step_growth = GROWTH  # a line that grew beyond the rest is named all the same
    assert slowing_steps(ev)


def test_steps_that_waited_longer_for_a_core_did_not_grow() -> None:
    """6x longer steps whose main thread's CPU per step grew 1.3x: the machine got busier."""
    assert slowing_steps(_ev(dataclasses.replace(GROWTH, cpu_ratio=1.3))) == []
    assert slowing_steps(_ev(dataclasses.replace(GROWTH, cpu_ratio=5.5)))


def test_small_unsteady_or_cheap_growth_is_not_named() -> None:
    assert slowing_steps(_ev(None)) == []
    assert slowing_steps(_ev(dataclasses.replace(GROWTH, last_s=0.0014))) == []  # < 1.5x
    assert slowing_steps(_ev(dataclasses.replace(GROWTH, rho=0.2))) == []  # noise
    assert slowing_steps(_ev(dataclasses.replace(GROWTH, extra_s=0.5))) == []  # 7% of the steps


def test_the_growth_leads_a_compute_bound_run() -> None:
    r = diagnose(_ev(GROWTH))
    assert r.findings[0].category == v.LOOP_OVERHEAD and "cat_grow.py:19" in r.findings[0].summary


def test_a_slow_rise_over_many_steps_is_said_per_thousand_steps() -> None:
    """0.5 -> 0.7 ms over 12,000 steps (growing_avg.py: a mean over every loss so far) read "each
    about 0.0 us longer than the one before"."""
    [f] = slowing_steps(_ev(dataclasses.replace(GROWTH, per_step_s=1.7e-8)))
    assert "about 17.0 us longer every 1,000 steps" in f.evidence[0].text, f.evidence[0].text
    [f] = slowing_steps(_ev(GROWTH))
    assert "each about 2.7 us longer than the one before" in f.evidence[0].text, f.evidence[0].text


def test_the_growing_line_is_not_said_again_as_the_loops_own_code_to_call_less_often() -> None:
    """metrics_concat.py: `all_probs = np.concatenate([all_probs, ...])` grew the steps 2.7 ->
    36.7 ms; beside the growth's fix it was also the loop's own code, "wrap the call in `if step %
    10 == 0:`", which would drop nine batches of predictions in ten. Said once, by the growth."""
    from gpubottle.evidence import StackEvidence, StackFrameShare
    from gpubottle.rules.compute import loop_overhead

    ev = _ev(GROWTH)
    ev.stacks = StackEvidence(samples_main=200, main_phases={"forward": 0.1},
                              main_outside_model=[StackFrameShare("<module>", "cat_grow.py:19", 0.89)])
    assert loop_overhead(ev) == []
    ev.stacks.main_outside_model = [StackFrameShare("log_metrics", "train.py:12", 0.5)]  # another line
    [f] = loop_overhead(ev)
    assert f.category == v.LOOP_OVERHEAD and "log_metrics" in f.summary
