"""Which part of the step a main-thread sample is in, and which of the loop's own functions takes the
time outside the model, on stacks named as py-spy names them (frames copied from a real run of
tests/scripts/phases/heavy_logging.py at --stack-rate 40 beside two busy programs: its log_metrics
called model.named_parameters(), a Module method, and that one sample made it part of the model's
forward; the verdict lost its loop-overhead finding)."""

from __future__ import annotations

from conftest import SCRIPTS

from gpubottle.analysis.stacks import Frame, named_time, phase_of

SITE = "/venv/lib/python3.11/site-packages/torch"
SCRIPT = str(SCRIPTS / "phases" / "heavy_logging.py")
MAIN = Frame("main", SCRIPT, 41)
LOG = Frame("log_metrics", SCRIPT, 16)
CALL = [Frame("Module._wrapped_call_impl", f"{SITE}/nn/modules/module.py", 1778),
        Frame("Module._call_impl", f"{SITE}/nn/modules/module.py", 1789)]
BACKWARD = [Frame("Tensor.backward", f"{SITE}/_tensor.py", 623),
            Frame("backward", f"{SITE}/autograd/__init__.py", 395),
            Frame("_engine_run_backward", f"{SITE}/autograd/graph.py", 979)]
STEP = [Frame("Optimizer.profile_hook_step.<locals>.wrapper", f"{SITE}/optim/optimizer.py", 514)]
NAMED = [Frame("Module.named_parameters", f"{SITE}/nn/modules/module.py", 2720),
         Frame("Module._named_members", f"{SITE}/nn/modules/module.py", 2655)]
TENSOR_ITER = [Frame("Tensor.__iter__", f"{SITE}/_tensor.py", 1180)]


def test_the_step_s_parts_are_the_module_call_and_the_autograd_entry_points():
    assert phase_of([MAIN, *CALL]) == "forward"
    assert phase_of([MAIN, *BACKWARD]) == "backward"
    assert phase_of([MAIN, Frame("grad", f"{SITE}/autograd/__init__.py", 500)]) == "backward"
    assert phase_of([MAIN, *STEP]) == "optimizer"
    # Module and Tensor methods the loop's own code calls are the loop's, not the model's.
    assert phase_of([MAIN, LOG, *NAMED]) == "other"
    assert phase_of([MAIN, LOG, *TENSOR_ITER]) == "other"


def test_logging_that_walks_the_parameters_is_named_outside_the_model():
    stacks = ([[MAIN, *CALL]] * 5 + [[MAIN, *BACKWARD]] * 4 + [[MAIN, *STEP]] * 3
              + [[MAIN, LOG]] * 80 + [[MAIN, LOG, *NAMED]] * 3 + [[MAIN, LOG, *TENSOR_ITER]] * 2)
    (top, *_) = named_time(stacks)
    assert top.function == "log_metrics" and top.share > 0.8


def test_the_loop_is_known_when_no_sample_fell_in_the_model():
    """On a fast machine 300 steps of 6 ms at 40 samples a second left 74 samples, two of them in
    the model or none: with none, `main` (in every sample) was named as the loop's own code, also
    when some samples were in main's own lines."""
    helper = Frame("_stats", SCRIPT, 12)
    # ... and a few in the loop's own line (float(loss)), where main calls nothing of the user's.
    stacks = [[MAIN, LOG]] * 70 + [[MAIN, LOG, *NAMED]] * 3 + [[MAIN, LOG, helper]] * 2 + [[MAIN]] * 3
    (top, *_) = named_time(stacks)
    assert top.function == "log_metrics" and top.share > 0.9
    # The loop's own code with nothing below it is named as it is: nothing else to name.
    (top, *_) = named_time([[MAIN]] * 10)
    assert top.function == "main"


def test_a_helper_busy_in_its_own_comprehension_is_named_with_the_loops_call():
    """tests/scripts/metrics_loop.py in a fresh clone's suite: its 56 main-thread samples all outside
    the model (a step of well under a millisecond), every one in per_sample_metrics' list
    comprehension. The helper "called" the comprehension in every sample, so it was taken for the
    loop's own code and the comprehension was named, with "call it every 10 steps" put at line 22
    inside the helper instead of at the loop's call."""
    metrics = Frame("per_sample_metrics", SCRIPT, 22)
    comp = Frame("per_sample_metrics.<locals>.<listcomp>", SCRIPT, 22)
    module = Frame("<module>", SCRIPT, 34)
    stacks = [[module, metrics, comp]] * 40 + [[module, metrics]] * 10 + [[module]] * 6
    (top, *_) = named_time(stacks)
    assert top.function == "per_sample_metrics" and top.share > 0.85
    assert (top.called_at or "").endswith("heavy_logging.py:34")
