"""optimizer-rebuilt from made-up evidence: a line that built an optimizer for every step or two is
said with what the new optimizer's empty state does; a few builds (one per phase or fold) are not."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import OptimizerRebuilt
from gpubottle.rules import diagnose


def _found(r: OptimizerRebuilt | None) -> list:
    ev = evidence(steps=50)
    ev.optimizer_rebuilt = r
    return [f for f in diagnose(ev).findings if f.category == v.OPTIMIZER_REBUILT]


def test_an_optimizer_built_every_step_is_said_at_its_line_with_what_its_state_does():
    [f] = _found(OptimizerRebuilt("torch.optim.adam.Adam", "train.py:9", 256, 256))
    assert f.severity == "warning" and f.summary.startswith("the loop builds a new Adam at every step "
                                                            "(train.py:9): Adam's moment estimates")
    [fix] = f.fixes
    assert fix.where == "train.py:9" and fix.text.startswith("build the optimizer once, before the loop")
    assert fix.expected_step_s is None and fix.expected_run_s is None
    [f] = _found(OptimizerRebuilt("torch.optim.sgd.SGD", "train.py:9", 30, 60))  # every other step
    assert "momentum buffers" in f.summary


def test_a_few_optimizers_from_one_line_are_phases_not_a_loop():
    assert _found(OptimizerRebuilt("Adam", "train.py:9", 4, 4)) == []  # 4 folds of 1 step: too few
    assert _found(OptimizerRebuilt("Adam", "train.py:9", 5, 500)) == []  # 5 folds of 100 steps
    assert _found(None) == []


def test_an_optimizer_built_each_epoch_over_the_same_parameters_is_said_a_fold_loop_is_not():
    """Measured shape (tests/scripts/real_code/optimizer_each_epoch.py): 5 SGD builds, one an epoch
    of 16 steps, 4 of them over the parameters the one before updated. Five folds, each a new
    model: 5 builds, none over the same parameters, not said."""
    def found(same: int, epochs: int = 5) -> list:
        ev = evidence(steps=80)
        ev.loaders[0].iterators = epochs
        ev.optimizer_rebuilt = OptimizerRebuilt("torch.optim.sgd.SGD", "train.py:27", 5, 80, same)
        return [f for f in diagnose(ev).findings if f.category == v.OPTIMIZER_REBUILT]

    [f] = found(4)
    assert f.summary.startswith("the loop builds a new SGD at every epoch (train.py:27), over the same "
                                "parameters: SGD's momentum buffers"), f.summary
    assert "g['lr'] = new_lr" in f.fixes[0].text and f.fixes[0].where == "train.py:27"
    assert found(0) == [] and found(4, epochs=20) == []  # a fold loop; builds not one an epoch
