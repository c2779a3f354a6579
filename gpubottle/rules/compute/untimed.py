"""An inference or generation script: no training step (no DataLoader batch, backward or optimizer
step) times it, and its main thread's samples are mostly in a model's forward. It read as start-up
("the script's own work before its first batch: cache it, or move it into __getitem__"); it is the
model's computation, said as compute-bound with what makes each call cost: a loop re-running a
sequence it grows by a token (a hand-written generate()), or the math itself. The input's growth
is read from the source (analysis/model_loop.py); its measurements are there."""

from __future__ import annotations

from dataclasses import dataclass

from gpubottle import vocabulary as v
from gpubottle.evidence import Evidence
from gpubottle.evidence.account import STARTUP
from gpubottle.report import Fact, Finding, Fix
from gpubottle.rules.common import untimed_model_share
from gpubottle.rules.compute.words import faster_math
from gpubottle.units import pct


@dataclass
class Untimed:
    share: float  # of the main thread's samples, in a model's forward or backward
    samples: int
    call: str | None  # the line calling the model
    grows: str | None  # the line in the loop around it appending to the input the call passes
    bf16: bool | None
    rows: str | None = None  # the loop around the call feeding it one row at a time, and its header
    rows_text: str | None = None


def decide_untimed(ev: Evidence) -> Untimed | None:
    share, st = untimed_model_share(ev), ev.stacks
    if share is None or st is None:
        return None
    return Untimed(share, st.samples_main, st.main_model_call, st.main_input_grows,
                   ev.cpu.bf16 if ev.cpu is not None else None, st.main_model_row_loop,
                   st.main_model_row_loop_text)


def _rows_fix(d: Untimed) -> Fix:
    """Measured here (infer_single.py): an MLP scoring 100,000 records one row a call, 4.9 s; 256
    rows a call, 1.5 s, the same scores."""
    return Fix(text=f"the loop at {d.rows} (`{d.rows_text}`) calls the model at {d.call} on one row at "
                    "a time: each call pays the model's per-call cost (every layer's Python and op "
                    "dispatch) for a single row. Call it on many rows at once, model(X[i:i + 256]) "
                    "(or the whole tensor where it fits), and take the results apart afterwards: "
                    "the same outputs in a few hundred calls (a test machine's MLP scoring 100,000 "
                    "records: 4.9 s one row a call, 1.5 s 256 rows a call); try it and time it",
               where=d.rows)


def _grown_fix(d: Untimed) -> Fix:
    return Fix(text=f"the loop calls the model at {d.call} on a sequence it lengthens at {d.grows}: each "
                    "call computes the whole sequence again, so every new token costs more than the "
                    "last. Keep the keys and values of the tokens already computed (a key/value cache: "
                    "use_cache=True with past_key_values in Hugging Face models, or a cache in your "
                    "attention) so that a call computes the newest token only, and generate several "
                    "prompts as one batch. Measured on a test machine, a 2-layer transformer making 48 "
                    "tokens after 16, 24 prompts: 0.90-1.12 s one at a time, 0.42-0.47 s as one batch, "
                    "0.44 s computing the newest token alone. Try it and time it",
               where=d.grows)


def untimed_model(ev: Evidence) -> list[Finding]:
    d = decide_untimed(ev)
    if d is None:
        return []
    at = (f", called at {d.call}" if d.call else "") + (
        f" one row at a time in a Python loop ({d.rows})" if d.rows and d.call and not d.grows else "")
    fixes = [_grown_fix(d)] if d.grows and d.call else []
    if d.rows and d.call and not d.grows:
        fixes.append(_rows_fix(d))
    fixes.append(Fix(text=faster_math(d.bf16, inference=True), where=d.call))
    return [Finding(
        v.COMPUTE_BOUND, "info", None,
        f"no training step was seen (no DataLoader batch, backward or optimizer step): the script "
        f"runs its model, {pct(d.share)} of its main thread's samples in the model's forward{at}; an "
        "inference loop, timed here as a whole, not step by step",
        [Fact(f"{pct(d.share)} of {d.samples} stack samples of the main thread in a model's forward "
              "or backward, and no training step", "model_share", round(d.share, 4))],
        fixes, phase=STARTUP)]
