"""Start-up named by the kind of work its stack samples are in: the first CUDA call creating the
GPU's context (torch/cuda/__init__.py's _lazy_init, torch 2.x) is that, at the user's line that
made it, not the user's function to cache; and the start-up rule does not blame the script for it.
(On an H100 and an H200 compute_bound.py's main() took 2.3-2.7 s before its first batch, the GPU's
context part of it (the stacks were not kept to say how much), and the fix said to cache all of it
with torch.save.)"""

from __future__ import annotations

from factories import evidence

from gpubottle.analysis.stack_names import startup_items
from gpubottle.analysis.stacks import Frame
from gpubottle.evidence.account import AccountEntry
from gpubottle.rules.phases.decide import decide_startup


def test_cuda_initialisation_is_named_as_such_at_the_users_line(tmp_path):
    script = str(tmp_path / "train.py")
    cuda = [Frame("<module>", script, 40), Frame("main", script, 21),
            Frame("_lazy_init", "/usr/lib/python3/dist-packages/torch/cuda/__init__.py", 529)]
    own = [Frame("<module>", script, 40), Frame("main", script, 25)]
    items = startup_items([cuda] * 8 + [own] * 2)
    assert items[0][0] == "CUDA initialisation (the GPU's context)" and items[0][2] == 0.8
    assert items[0][1] is not None and items[0][1].endswith("train.py:21")
    assert items[1][0] == "main"
    # A stack py-spy read torn: one frame, no caller (it was named start-up work)
    torn = [Frame("_path_split.<locals>.<genexpr>", "<frozen importlib._bootstrap_external>", 134)]
    assert [name for name, _, _ in startup_items([cuda] * 8 + [torn] * 2)] == [
        "CUDA initialisation (the GPU's context)"]
    # ...or several frames with no entry beneath them (inspect's, read under `import torch._dynamo`:
    # "Signature.__init__ 0.29 s"); a stack from `python -m`'s runpy entry is whole
    inspect = "/usr/lib/python3.11/inspect.py"
    cut = [Frame("_signature_from_callable", inspect, 2457), Frame("Signature.replace", inspect, 3052),
           Frame("Signature.__init__", inspect, 3022)]
    runpy = [Frame("_run_module_as_main", "<frozen runpy>", 198), *cuda]
    assert [name for name, _, _ in startup_items([runpy] * 8 + [cut] * 2)] == [
        "CUDA initialisation (the GPU's context)"]


def test_an_import_the_probes_watch_is_the_import_not_the_probes(tmp_path):
    """`import torch` under the watcher that installs the probes once it is done: samples loading
    torch._C (C code, only importlib's frames beneath the watcher's) were said as "gpubottle
    installing its probes" (0.29 s of a 3-s run)."""
    import os

    from gpubottle.probes.sites import OWN_DIR

    script = tmp_path / "train.py"
    script.write_text("import os\nimport torch\n")
    frozen = "<frozen importlib._bootstrap>"
    loading = [Frame("<module>", str(script), 2), Frame("_find_and_load", frozen, 1176),
               Frame("exec_module", os.path.join(OWN_DIR, "probes", "install.py"), 54),
               Frame("_call_with_frames_removed", frozen, 241)]
    installing = [Frame("<module>", str(script), 2), Frame("_find_and_load", frozen, 1176),
                  Frame("install_when_torch_imported", os.path.join(OWN_DIR, "probes", "install.py"), 80)]
    items = startup_items([loading] * 3 + [installing])
    assert [(name, share) for name, _, share in items] == [
        ("import torch", 0.75), ("gpubottle installing its probes", 0.25)]
    assert items[0][1] is not None and items[0][1].endswith("train.py:2")


def test_the_start_up_rule_does_not_blame_the_script_for_the_gpus_context():
    ev = evidence(steps=40)
    ev.account = [AccountEntry(phase="startup", seconds=6.0, share=0.6,
                               parts={"import torch": 2.0, "CUDA initialisation (the GPU's context)": 3.5,
                                      "main": 0.5}),
                  AccountEntry(phase="train", seconds=4.0, share=0.4)]
    assert decide_startup(ev) is None  # 0.5 s of its own: under the floor
    ev.account[0].parts["main"] = 2.5
    d = decide_startup(ev)
    assert d is not None and (d.top, d.top_s, d.own_s) == ("main", 2.5, 2.5)


def test_workers_started_with_spawn_are_named_and_their_fix_is_fork_not_caching(tmp_path):
    """multiprocessing's spawn pickles the dataset into each worker on the main thread: that start
    is said as such, and the start-up rule's fix is fork at the DataLoader, with the run it takes."""
    import multiprocessing.popen_spawn_posix as popen
    import multiprocessing.reduction as reduction

    import torch.utils.data.dataloader as dataloader

    from gpubottle.analysis.work_kinds import SPAWNING
    from gpubottle.rules.phases.words import startup_fixes

    script = str(tmp_path / "train.py")
    spawn = [Frame("<module>", script, 50), Frame("main", script, 33),
             Frame("__init__", dataloader.__file__, 1100), Frame("_launch", popen.__file__, 62),
             Frame("dump", reduction.__file__, 60)]
    items = startup_items([spawn] * 7 + [[Frame("<module>", script, 50)]] * 3)
    assert items[0][0] == SPAWNING and items[0][1] is not None and items[0][1].endswith("train.py:33")
    ev = evidence(steps=40, num_workers=4)
    ev.loaders[0].start_method = "spawn"
    ev.account = [AccountEntry(phase="startup", seconds=12.0, share=0.6,
                               parts={"import torch": 2.0, SPAWNING: 8.0, "main": 2.0}),
                  AccountEntry(phase="train", seconds=8.0, share=0.4)]
    d = decide_startup(ev)
    assert d is not None and d.is_spawning and d.loader is ev.loaders[0]
    fix = startup_fixes(d)[0]
    assert fix.change == {"multiprocessing_context": ["spawn", "fork"]} and fix.where == "train.py:42"
    assert fix.expected_run_s == 12.0 and "2.0 s a worker" in fix.text and "holds" not in fix.text
    # What each spawned worker holds beyond a bare one: the copy it received.
    from gpubottle.evidence import MemoryEvidence
    from gpubottle.rules import thresholds as th

    ev.memory = MemoryEvidence(per_worker_private_peak_bytes=th.SPAWNED_WORKER_BASE_BYTES + (300 << 20))
    fix = startup_fixes(decide_startup(ev))[0]  # type: ignore[arg-type]
    assert "each worker then holds about 300 MiB of its own, its copy" in fix.text


def test_a_dataset_read_sample_by_sample_before_training_is_that_at_the_reading_line(tmp_path):
    """labels_scan's shape: class weights from `[ds[i][1] for i in range(len(ds))]`, every sample
    loaded to read its label (0.86 s of a 20,000-image run's start-up), was said as
    "Images.__getitem__ takes 0.86 s: try computing it once and caching the result ... or doing the
    work per sample in __getitem__" at its def. Now the samples read one by one, at the line that
    reads them, with the pre-pass fix (the labels from the dataset's own array: 7.1-7.7 s -> 6.0-6.2 s).
    Through a DataLoader it is the loader's pre-pass, said apart; called by a library, not this."""
    import torch.utils.data.dataloader as dataloader

    from gpubottle.evidence.account import SAMPLES_READ
    from gpubottle.rules.phases.words import startup_fixes

    script = str(tmp_path / "train.py")
    runpy = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", script, 40)]
    read = [*runpy, Frame("main", script, 23), Frame("main.<locals>.<listcomp>", script, 23),
            Frame("Images.__getitem__", script, 16)]
    items = startup_items([read] * 8 + [runpy] * 2)
    assert items[0][0] == f"{SAMPLES_READ}, by Images.__getitem__" and items[0][1] is not None
    assert items[0][1].endswith("train.py:23")
    looped = [*runpy, Frame("main", script, 23), Frame("__next__", dataloader.__file__, 733),
              Frame("Images.__getitem__", script, 16)]
    assert not startup_items([looped] * 8)[0][0].startswith(SAMPLES_READ)
    import torch.utils.data.dataset as dataset  # a Subset after random_split between: still this

    subset = [*runpy, Frame("main", script, 23), Frame("main.<locals>.<listcomp>", script, 23),
              Frame("Subset.__getitem__", dataset.__file__, 412), Frame("Images.__getitem__", script, 16)]
    assert startup_items([subset] * 8)[0][:2] == (f"{SAMPLES_READ}, by Images.__getitem__", items[0][1])
    ev = evidence(steps=40)
    name = f"{SAMPLES_READ}, by Images.__getitem__"
    ev.account = [AccountEntry(phase="startup", seconds=3.8, share=0.46,
                               parts={"import torch": 0.9, name: 0.86, "Images.__init__": 0.55},
                               part_sites={name: "train.py:23"}),
                  AccountEntry(phase="train", seconds=3.6, share=0.44)]
    d = decide_startup(ev)
    assert d is not None and d.is_prepass and d.site == "train.py:23"
    fix = startup_fixes(d)[0]
    assert "loading every sample it draws once more" in fix.text and fix.where == "train.py:23"
