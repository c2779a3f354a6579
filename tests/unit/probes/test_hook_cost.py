"""The price of a hook that does not time itself, calibrated in the process (the account's hooks
part prices the rarer records with it)."""

from gpubottle.probes.recorder import Recorder, emit_cost


def test_a_rarer_hooks_price_is_measured():
    # A wrapper's call, two clock reads and a record: around a microsecond, never nothing.
    assert 0 < min(emit_cost() for _ in range(3)) < 1e-4


def test_timed_hooks_add_up(tmp_path):
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.timed_hook(2e-6)
    rec.timed_hook(3e-6)
    assert (rec.timed, round(rec.hooks_s, 9)) == (2, 5e-6)
    rec.close()


def test_a_hook_preempted_inside_counts_as_a_call_but_not_its_wait(tmp_path):
    rec = Recorder(str(tmp_path / "e.jsonl"), start_thread=False)
    rec.timed_hook(4e-6)
    rec.timed_hook(0.004)  # another process's timeslice, not the hook's work
    assert (rec.timed, round(rec.hooks_s, 9)) == (2, 4e-6)
    rec.close()


def test_a_new_use_of_the_recorder_starts_its_hooks_time_over(tmp_path):
    # gpubottle.profile() used again in one process: each use's account has its own hooks' time.
    rec = Recorder(str(tmp_path / "a.jsonl"), start_thread=False)
    rec.timed_hook(4e-6)
    rec.reopen(str(tmp_path / "b.jsonl"))
    assert (rec.timed, rec.hooks_s) == (0, 0.0)
    rec.close()
