"""A loader whose time is the dataset's own Python (a per-element comprehension decoding each
sample), where more workers lead: the second fix says what the time is and that making it cheaper
gains whatever the worker count (shaped like a measured run: 94 ms of a 101 ms step waiting, the
main process busy throughout, 98% of its loading samples in __getitem__)."""

from __future__ import annotations

from factories import evidence

from gpubottle import vocabulary as v
from gpubottle.evidence import StackEvidence, StackFrameShare
from gpubottle.rules import diagnose

GETITEM = "data.py:10"


def _ev(hot: list[StackFrameShare], blocked: bool = False):
    ev = evidence(steps=60, step_s=0.101, wait_s=0.094, wait_cpu_s=None if blocked else 0.094,
                  num_workers=0, cores=2, tree=1.1, main=1.1)
    ev.stacks = StackEvidence(samples_main=80, main_phases={"data": 0.93, "forward": 0.07}, main_making=74,
                              main_hot=hot)
    return ev


def test_the_samples_own_python_is_named_beside_the_worker_fix():
    hot = [StackFrameShare("Images.__getitem__", GETITEM, 0.51),
           StackFrameShare("Images.__getitem__.<locals>.<listcomp>", GETITEM, 0.47)]
    f = diagnose(_ev(hot)).findings[0]
    assert f.category == v.DATA_STARVED
    assert f.fixes[0].change.get("num_workers")
    [own] = [x for x in f.fixes if x.where == GETITEM]
    assert own.text.startswith("Images.__getitem__ (data.py:10) takes 98% of the time spent making "
                               "batches, Python per element (comprehensions over the sample's values: 47%)")
    assert "time it" in own.text and own.expected is None and not own.change


def test_time_in_a_library_or_in_another_function_is_not_this_fix():
    other = [StackFrameShare("decode", "data.py:30", 0.9)]
    assert not any("each worker runs it whole" in x.text for x in diagnose(_ev(other)).findings[0].fixes)
    lib = [StackFrameShare("Images.__getitem__", GETITEM, 0.9, kind="parsing JSON (json.loads)")]
    assert not any("each worker runs it whole" in x.text for x in diagnose(_ev(lib)).findings[0].fixes)


def test_where_the_cores_are_in_use_the_samples_own_python_is_what_must_get_cheaper():
    """Shaped like a measured text classifier (a review tokenized in a comprehension per sample,
    num_workers=0 on 2 cores, 1.97 cores in use: 3.9 ms of a 9.0 ms step waiting, 94% of the loading
    samples in __getitem__; 1 or 2 workers made its epochs slower, 0.9 -> 1.6-1.9 s; the ids made
    once in __init__ 0.4 s). It read only "move augmentation to batched tensor ops", where there was
    no augmentation."""
    from gpubottle.rules.input.fix_words import BATCHED_TEXT

    ev = evidence(steps=240, step_s=0.009, wait_s=0.0039, wait_cpu_s=0.0039, num_workers=0, cores=2,
                  tree=1.97, main=1.9)
    ev.loaders[0].dataset_class = "Reviews"
    ev.stacks = StackEvidence(samples_main=31, main_making=28, main_hot=[
        StackFrameShare("Reviews.__getitem__.<locals>.<listcomp>", GETITEM, 0.75),
        StackFrameShare("Reviews.__getitem__", GETITEM, 0.19)])
    f = diagnose(ev).findings[0]
    assert f.category == v.PREPROCESSING_BOUND
    assert f.fixes[0].text.startswith("Reviews.__getitem__ (data.py:10) takes 94% of the time spent making "
                                      "batches, Python per element (comprehensions over the sample's "
                                      "values: 75%): more workers would run it beside the step")
    assert "work done once in __init__" in f.fixes[0].text and f.fixes[0].where == GETITEM
    assert not any(x.text == BATCHED_TEXT for x in f.fixes)
    assert not any("num_workers" in x.change for x in f.fixes)
    ev.stacks.main_hot = [StackFrameShare("decode", "data.py:30", 0.9)]  # not the dataset's own
    assert any(x.text == BATCHED_TEXT for x in diagnose(ev).findings[0].fixes)


def test_a_getitem_that_draws_nothing_is_told_to_make_its_samples_once():
    """tests/scripts/real_code/regex_reviews.py's shape (reviews tokenized with a regex per sample,
    nothing random): the generic "work done once in __init__ where ..." becomes the change itself,
    made every sample once into tensors, with what it costs (a run of one epoch gains nothing);
    where a draw is in it (or not known), the generic words stay."""
    ev = evidence(steps=240, step_s=0.0103, wait_s=0.0036, wait_cpu_s=0.0036, num_workers=0, cores=2,
                  tree=1.82, main=1.0)
    ev.loaders[0].dataset_class = "Reviews"
    ev.stacks = StackEvidence(samples_main=60, main_making=55, main_hot=[
        StackFrameShare("Reviews.__getitem__", GETITEM, 0.52),
        StackFrameShare("Reviews.__getitem__.<locals>.<listcomp>", GETITEM, 0.45)])
    for same in (None, False):
        ev.loaders[0].same_every_epoch = same
        text = diagnose(ev).findings[0].fixes[0].text
        assert "work done once in __init__ where a sample's result" in text and "draws" not in text, text
    ev.loaders[0].same_every_epoch = True
    fix = diagnose(ev).findings[0].fixes[0]
    assert "It draws nothing at random, so each sample comes out the same every epoch" in fix.text, fix
    assert "self.x = torch.stack" in fix.text and "one epoch gains nothing" in fix.text, fix
    assert fix.where == GETITEM and fix.expected is None and "time it" in fix.text
