"""A loop with no DataLoader that waits for batches another process or thread makes and puts on a
queue (analysis/producers.py): the loop is starved by its producer, not computing. Said with the
line it waits at and, where py-spy saw the producer, what that is busy with. No number is promised:
measured on a producer process making each batch in Python (4 ms) for a 0.5 ms step, a second
producer gave nothing on 2 cores (loop 2.1-2.8 s either way) and numpy arrays in place of tensors
on the queue 1.25x (each tensor received from another process makes a round trip to it for its
shared memory): what limits depends on the machine, so the fix is a try."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence, Measured
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules import thresholds as th
from gpubottle.rules.input.loop import stack_input_share
from gpubottle.units import ms, pct


@dataclass
class ProducerWait:
    share: float  # of the main thread's samples, blocked receiving its batches
    samples: int
    site: str | None  # the loop's line that waits (q.get())
    statement: str | None
    step_s: float
    producer_busy: float | None  # the run's other processes: share of their samples not blocked
    producer_hot: str | None
    producer_hot_site: str | None
    producer_hot_share: float | None
    from_process: bool | None  # the batches come through multiprocessing; False: a thread's queue

    @property
    def wait_s(self) -> float:
        return self.share * self.step_s


def decide_producer_wait(ev: Evidence, w: Measured) -> ProducerWait | None:
    st = ev.stacks
    share = stack_input_share(ev, w, st.main_wait_share if st is not None else None)
    if st is None or share is None:
        return None
    return ProducerWait(share, st.samples_main, st.main_wait_site, st.main_wait_statement,
                        w.mean_step_s, st.producer_busy if st.producer_samples else None,
                        st.producer_hot, st.producer_hot_site, st.producer_hot_share,
                        st.main_wait_from_process)


def _facts(d: ProducerWait) -> list[Fact]:
    line = f"`{d.statement}` ({d.site})" if d.statement else (d.site or "its own line")
    facts = [Fact(f"no DataLoader: the main thread waits at {line} for batches made elsewhere "
                  f"{pct(d.share)} of its time ({d.samples} stack samples), about {ms(d.wait_s)} of "
                  f"each {ms(d.step_s)} step", "input_share", round(d.share, 4))]
    if d.producer_busy is not None:
        where = (f", {pct(d.producer_hot_share or 0.0)} of that in {d.producer_hot} "
                 f"({d.producer_hot_site})" if d.producer_hot else "")
        who = ("the process's other threads (the producers)" if d.from_process is False else
               "the run's other processes (the producers)")
        facts.append(Fact(f"{who} are busy {pct(d.producer_busy)} of their samples{where}",
                          "producer_busy", d.producer_busy))
    return facts


def producer_wait(ev: Evidence, w: Measured) -> list[Finding]:
    d = decide_producer_wait(ev, w)
    if d is None:
        return []
    hot = f" ({d.producer_hot} at {d.producer_hot_site})" if d.producer_hot else ""
    how = (" tensors put on a multiprocessing queue are each received through a round trip to the "
           "process that made them (numpy arrays, or the DataLoader's own transfer, avoid it)."
           if d.from_process else
           " a producer thread shares the loop's GIL: its Python work runs by turns with the loop's "
           "own, where worker processes would run it beside the loop." if d.from_process is False else "")
    fix = Fix(
        text=(f"try: make each batch cheaper where it is made{hot}, or make batches in several "
              "producers at once, e.g. DataLoader workers over an IterableDataset (DataLoader(ds, "
              "batch_size=None, num_workers=N), each worker its share via get_worker_info()), so one "
              f"is ready when the loop asks;{how} Time it: which of these limits depends on the "
              "machine"),
        where=d.producer_hot_site or d.site)
    summary = (f"the training loop waits for batches from its producer {pct(d.share)} of the time: "
               "the batches are made or delivered slower than the steps use them")
    return [Finding(v.DATA_STARVED, th.severity_for_share(d.share), round(d.share, 4), summary,
                    _facts(d), [fix])]
