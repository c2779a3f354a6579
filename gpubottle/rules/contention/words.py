"""cpu-contention's facts, summary (one cause each) and fixes."""

from __future__ import annotations

from gpubottle.report import Fact, Fix
from gpubottle.rules.contention.decide import Contention, Outside, Threads
from gpubottle.units import cores, n_cores


def _names(o: Outside) -> str:
    return ", ".join(f"{p['name']} (pid {p['pid']}, {n_cores(float(p['cores']))})"
                     for p in o.named)


def _origin(t: Threads) -> str:
    if t.site:
        return f"the script sets it at {t.site}"
    if t.env:
        return "from " + ", ".join(f"{k}={val}" for k, val in t.env.items())
    return "torch's default (it counts the machine's cores, not the container's limit)"


def facts(d: Contention) -> list[Fact]:
    out: list[Fact] = []
    o = d.outside
    if o is not None and o.named:
        out.append(Fact(f"processes outside this run use {cores(o.cores)} of {n_cores(d.available)}: "
                        f"{_names(o)}", "outside_cores", round(o.cores, 3)))
    elif o is not None:
        out.append(Fact(f"{n_cores(o.cores)} were busy outside the run's processes, named by no "
                        "process (short-lived processes, the kernel's work for the run, processes that "
                        "ended between samples): unattributed", "unattributed_cores", round(o.cores, 3)))
    t = d.threads
    if t is not None and t.left is not None:
        out.append(Fact(
            f"torch computes with {t.threads} threads ({_origin(t)}) while other programs leave the "
            f"run about {cores(max(0.0, t.left))} of its {n_cores(d.available)}: its threads wait "
            "for each other at every parallel op, spinning while those programs hold the cores",
            "torch_threads", float(t.threads)))
    elif t is not None:
        out.append(Fact(
            f"torch computes with {t.threads} threads ({_origin(t)}) but only {n_cores(d.available)} "
            f"are available (affinity {t.affinity}, cgroup quota {t.quota or 'none'}): "
            "threads beyond the cores wait for each other at every parallel op",
            "torch_threads", float(t.threads)))
    if d.workers is not None:
        out.append(Fact(f"{d.workers} DataLoader workers share {n_cores(d.available)}", "num_workers",
                        float(d.workers)))
    if d.own is not None:
        out.append(Fact(f"processes the script started beside its DataLoader workers use "
                        f"{cores(d.own.cores)} of the {n_cores(d.available)}"
                        + (f", busiest in {d.own.function} ({d.own.site})" if d.own.function else ""),
                        "own_processes_cores", round(d.own.cores, 3)))
    return out


def fixes(d: Contention) -> list[Fix]:
    out: list[Fix] = []
    if d.outside is not None and d.outside.named:
        out.append(Fix(text=f"stop or move the competing work ({_names(d.outside)}), or pin it to other "
                            "cores"))
    t = d.threads
    if t is not None and t.left is not None:
        out.append(Fix(
            text=f"while other programs hold the cores, compute on {t.target} thread(s): "
            f"torch.set_num_threads({t.target}) at the start of the script, or OMP_NUM_THREADS="
            f"{t.target} (or OMP_WAIT_POLICY=PASSIVE: threads sleep instead of spinning) where the "
            "job is launched; once the cores are free again, fewer threads may be slower: try it and "
            "compare", where=t.site, change={"torch.set_num_threads": [t.threads, t.target]}))
    elif t is not None:
        if t.site:
            text = f"use as many threads as cores: torch.set_num_threads({t.target})"
        elif t.env_names:
            text = (f"use as many threads as cores: set {' and '.join(t.env_names)}={t.target} "
                    f"where the job is launched (or call torch.set_num_threads({t.target}) first thing)")
        else:
            text = (f"use as many threads as cores: torch.set_num_threads({t.target}) at the start of the "
                    f"script, or OMP_NUM_THREADS={t.target} where the job is launched")
        out.append(Fix(text=text, where=t.site, change={"torch.set_num_threads": [t.threads, t.target]}))
    if d.workers is not None:
        out.append(Fix(
            text=f"{d.workers} workers that each compute share {n_cores(d.available)}: fewer may "
            "make batches as fast with less switching and memory; try it and compare",
            where=d.workers_site, change={"num_workers": [d.workers, max(1, int(d.available))]}))
    if d.own is not None:
        what = d.own.function or "the script's own side process"
        out.append(Fix(
            text=f"{what} runs beside the training on the cores it needs: do its work less often or "
            "in larger pieces, lower its priority (os.nice(10) where it starts), or move it off this "
            "machine; try it and compare", where=d.own.site))
    return out


def summary(d: Contention) -> str:
    causes = []
    if d.outside is not None:
        causes.append("other programs use the cores" if d.outside.named
                      else "CPU busy outside the run's processes, by no named process")
    if d.threads is not None:
        causes.append("more torch threads than the cores other programs leave"
                      if d.threads.left is not None else "more torch threads than cores")
    if d.workers is not None:
        causes.append("more busy DataLoader workers than cores")
    if d.own is not None:
        causes.append("the script's own side processes use the cores")
    return "the run competes for CPU: " + "; ".join(causes)
