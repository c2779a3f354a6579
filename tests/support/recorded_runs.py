"""Recorded runs: the raw run directory of a real `gpubottle run` of a test script, kept in
tests/runs/ and diagnosed again by the real `gpubottle report` in the suite.

Why: a run costs the suite ~2.5 s of CPU before the script's first step (importing torch and
torch._dynamo, which every torch.optim step imports), and the shapes of tests/scripts/real_code are
each a run whose test only reads the verdict: sixty such runs were a third of the suite's CPU, over
its 5 minutes on 2 cores. Their probes and collectors still run live in the suite's other tests;
what a recording keeps testing is everything from the raw files on: the clock, the account, the
rules and the fixes' lines, read from what the collectors wrote on torch 2.13.

- A recording is keyed by the script's path and content, its arguments, gpubottle's options, the
  threads and environment: change any of them and the test runs live (with a warning) until
  `make record-runs` records it again. Paths in the environment are keyed under the checkout
  (@ROOT@), and PYTHONPATH's entries from outside it are left out (the machine's own, not the
  test's); a script outside the checkout (a test's copy in its temporary folder) by its name.
- `make record-runs` (GPUBOTTLE_RECORD_RUNS=1) runs those tests live and keeps a run only when its
  test passed on it.
- Paths under the checkout are stored as @ROOT@ and put back where the suite runs, and so are the
  paths under a run's working folder outside it (@CWD@: a test's temporary folder); derived files
  (evidence.json, report.json, the pictures, py-spy's merged profile) are left out: `report`
  writes them again from the raw ones.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RUNS = ROOT / "tests" / "runs"
PLACEHOLDER = "@ROOT@"
CWD_PLACEHOLDER = "@CWD@"
# What `gpubottle report` writes again from the raw files (or, for the merged profile, needs not).
DERIVED = {"evidence.json", "report.json", "index.html", "timeline.json", "stacks/profile.speedscope.json"}


def recording_key(script: Path, script_args: tuple[str, ...], opts: tuple[str, ...],
                  threads: int | None, env: dict[str, str] | None) -> str:
    where = script.resolve()
    name = str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else where.name
    what = [name, hashlib.sha256(script.read_bytes()).hexdigest(),
            list(script_args), list(opts), threads, sorted(_keyed_env(env or {}).items())]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:12]


def _keyed_env(env: dict[str, str]) -> dict[str, str]:
    """The environment as the key sees it: the same in any checkout, on any machine."""
    keyed = {}
    for name, value in env.items():
        if name == "PYTHONPATH":  # the test's own entries, not the machine's
            value = os.pathsep.join(p for p in value.split(os.pathsep) if Path(p).is_relative_to(ROOT))
        keyed[name] = value.replace(str(ROOT), PLACEHOLDER)
    return keyed


def _places(cwd: Path | None) -> list[tuple[str, str]]:
    """(path, placeholder) pairs, the longer path first: the checkout, and a working folder that is
    neither under it nor above it."""
    pairs = [(str(ROOT), PLACEHOLDER)]
    if cwd is not None and not cwd.is_relative_to(ROOT) and not ROOT.is_relative_to(cwd):
        pairs.append((str(cwd), CWD_PLACEHOLDER))
    return sorted(pairs, key=lambda p: -len(p[0]))


def recording_path(test_name: str, key: str) -> Path:
    return RUNS / f"{test_name}-{key}.tar.gz"


def pack(run_dir: Path, into: Path, about: dict[str, object], cwd: Path | None = None,
         kept: tuple[str, ...] = ()) -> None:
    """The raw files of run_dir, paths under the checkout as @ROOT@ (and under `cwd`, the folder
    the run was started from, as @CWD@), into a .tar.gz; `kept`: files the script wrote in `cwd`
    that its test reads too (a fake device's own record of what it did), kept as they are."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=9) as tar:
        _add(tar, "recording.json", json.dumps(about, indent=1).encode())
        for name in kept:
            _add(tar, f"cwd/{name}", ((cwd or ROOT) / name).read_bytes())
        for path in sorted(run_dir.rglob("*")):
            rel = path.relative_to(run_dir).as_posix()
            if path.is_file() and rel not in DERIVED:
                data = path.read_bytes()
                for place, placeholder in _places(cwd):
                    data = data.replace(place.encode(), placeholder.encode())
                _add(tar, f"run/{rel}", data)
    into.parent.mkdir(parents=True, exist_ok=True)
    tmp = into.with_suffix(".part")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, into)


def unpack(recording: Path, into: Path, cwd: Path | None = None) -> Path:
    """The run directory of a recording under `into`, with this checkout's paths (and `cwd` where
    the recorded run's working folder was); its kept files back in `cwd`."""
    with tarfile.open(recording, "r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or ".." in member.name or not member.name.startswith(("run/", "cwd/")):
                continue
            data = tar.extractfile(member)
            assert data is not None
            if member.name.startswith("cwd/"):
                (cwd or ROOT).joinpath(member.name[len("cwd/"):]).write_bytes(data.read())
                continue
            out = into / member.name
            out.parent.mkdir(parents=True, exist_ok=True)
            raw = data.read()
            for place, placeholder in _places(cwd):
                raw = raw.replace(placeholder.encode(), place.encode())
            out.write_bytes(raw)
    return into / "run"


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0  # the same raw files make the same archive
    tar.addfile(info, io.BytesIO(data))
