"""analysis/zero_grads.py on event sequences shaped like the loops it reads: accumulation zeroed
before every micro-batch (the bug), zeroed once a step (either end), and a GAN's two optimizers."""

from __future__ import annotations

from gpubottle.analysis.zero_grads import grads_discarded
from gpubottle.collect.events import ChildEvents
from gpubottle.wire import Backward, OptimizerStep, ZeroGrads


def _events(pattern: str) -> ChildEvents:
    """`pattern`: Z zero_grad, B backward, S optimizer step, one every 10 ms in a window."""
    ev = ChildEvents()
    calls = []
    for i, c in enumerate(pattern):
        t = 1.0 + i * 0.01
        if c == "Z":
            calls.append([t, f"train.py:{10 + i % 2}"])
        elif c == "B":
            ev.backwards.append(Backward(t - 0.005, t))
        else:
            ev.opt_steps.append(OptimizerStep(1, t))
    ev.zero_grads.append(ZeroGrads(0.99, 1.0 + len(pattern) * 0.01, calls))
    return ev


def test_accumulation_zeroed_before_every_micro_batch_clears_all_but_the_last() -> None:
    g = grads_discarded(_events("ZBZBZBZBS" * 3))
    assert g is not None and (g.backwards, g.discarded, g.steps) == (12, 9, 3)
    assert g.site in ("train.py:10", "train.py:11")


def test_zeroed_once_a_step_or_one_backward_a_step_or_two_optimizers_clear_nothing() -> None:
    for pattern in ("BBBBSZ" * 3, "ZBBBBS" * 3, "ZBS" * 4, "ZBSZBS" * 2):
        g = grads_discarded(_events(pattern))
        assert g is not None and g.discarded == 0, pattern
    assert grads_discarded(_events("ZBZB")) is None  # no step in the window: nothing to tell
    assert grads_discarded(ChildEvents()) is None


def _gan(detached: bool) -> ChildEvents:
    """Three iterations of a GAN's loop as probes/zero_grads.py records them: D's step (zero_grad
    on D's optimizer, a backward at line 23, its step), then G's (zero_grad on G's, a backward at
    line 28, its step). D's backward fills D's watched gradient, then G's where fake went in
    undetached; G's backward fills D's (the way to G's), then G's."""
    from gpubottle.wire import OptimizerBuilt

    OPT_G, OPT_D = 7, 8
    ev = ChildEvents()
    ev.optimizers += [OptimizerBuilt(OPT_G, "Adam", "gan.py:12"), OptimizerBuilt(OPT_D, "Adam", "gan.py:13")]
    calls, grads = [], []
    t = 1.0
    for _ in range(3):
        calls.append([t, "gan.py:22", OPT_D])
        ev.backwards.append(Backward(t + 0.01, t + 0.05))
        grads.append([t + 0.02, OPT_D, "gan.py:23"])
        if not detached:
            grads.append([t + 0.04, OPT_G, "gan.py:23"])
        ev.opt_steps.append(OptimizerStep(OPT_D, t + 0.06))
        calls.append([t + 0.07, "gan.py:27", OPT_G])
        ev.backwards.append(Backward(t + 0.08, t + 0.12))
        grads += [[t + 0.09, OPT_D, "gan.py:28"], [t + 0.11, OPT_G, "gan.py:28"]]
        ev.opt_steps.append(OptimizerStep(OPT_G, t + 0.13))
        t += 0.2
    ev.zero_grads.append(ZeroGrads(0.99, t, calls, None, grads))
    return ev


def test_a_gans_discriminator_backward_through_the_generator_is_cleared_upstream() -> None:
    from gpubottle.analysis.zero_grads import grads_for_another

    a = grads_for_another(_gan(detached=False))
    assert a is not None and a.upstream, a
    assert (a.optimizer_site, a.backward_site, a.zero_site) == ("gan.py:12", "gan.py:23", "gan.py:27")
    assert (a.cleared, a.passes, a.steps) == (3, 6, 3)
    assert grads_discarded(_gan(detached=False)).discarded == 0  # (one order for all: nothing seen)
    # Detached, D's gradients from G's step are still cleared unused (downstream: the way to G's)
    b = grads_for_another(_gan(detached=True))
    assert b is not None and not b.upstream and b.optimizer_site == "gan.py:13", b


def test_the_undetached_outputs_names_are_read_under_the_runs_folder(tmp_path) -> None:
    """rules/compute/other_net.py reads the optimizer, the loss and G's output from the sites'
    sources relative to the run's folder (a report re-rendered from elsewhere), and names the loss
    as the site names its file."""
    from gpubottle.evidence import GradsForAnother
    from gpubottle.rules.compute.other_net import undetached

    (tmp_path / "gan.py").write_text(
        "opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)\n"
        "for step in range(10):\n"
        "    fake = G(z)\n"
        "    d_loss = bce(D(real), ones) + bce(D(fake), zeros)\n"
        "    d_loss.backward(retain_graph=True)\n")
    u = undetached(GradsForAnother("gan.py:1", "gan.py:5", "gan.py:9", 3, 6, 3, True), str(tmp_path))
    found = (u.optimizer, u.network, u.loss_site, u.output, u.retains)
    assert found == ("opt_g", "G", "gan.py:4", "fake", True), found
