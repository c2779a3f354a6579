"""A large argument of the model's call that is almost all zeros, multiplied as a dense matrix (a
graph's adjacency passed to a GCN dense: analysis/sparse_inputs.py). Made sparse once, `@` with it
computes its nonzeros only, the same result. Measured on this VM: a 2-layer GCN on 6,000 nodes,
adjacency 0.17% nonzero, 60 epochs 6.7 s dense, 3.0 s with it to_sparse_csr() (the script run
whole; the same losses). Where no line of the forward is seen multiplying it, nothing is said."""

from __future__ import annotations

from gpubottle.evidence import SparseInput
from gpubottle.report import Fix

MAX_DENSITY = 0.01  # said at or under this share of nonzeros (the probe records up to 5%)


def _share(x: float) -> str:
    return f"{x:.2%}"


def said(inputs: list[SparseInput]) -> SparseInput | None:
    return next((s for s in inputs if s.multiplied_at and s.density <= MAX_DENSITY), None)


def mostly_zeros_fix(s: SparseInput) -> Fix:
    what = f"`{s.argument}`" if s.argument else f"{s.module}'s argument {s.position + 1}"
    shape = " x ".join(f"{d:,}" for d in s.shape)
    return Fix(text=(f"{what} ({shape}, {_share(s.density)} nonzero), passed to {s.module} at "
                     f"{s.site or 'a line not known'}, is multiplied as a dense matrix at {s.multiplied_at}: "
                     "every zero multiplied, forward and backward. Make it sparse once, before the loop "
                     f"({s.argument or 'it'} = {s.argument or 'it'}.to_sparse_csr(), or .to_sparse()): "
                     "`@` (torch.sparse.mm) then computes its nonzeros only, the same result (it needs "
                     "no gradient of its own). On a test machine a 2-layer GCN on 6,000 nodes, its "
                     "adjacency 0.17% nonzero, ran 60 epochs in 6.7 s dense, 3.0 s sparse; try it and "
                     "time it"), where=s.multiplied_at)
