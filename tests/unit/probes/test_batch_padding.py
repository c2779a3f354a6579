"""probes/batch_leaves.padding on real batches: token ids padded to a fixed length (and their
attention mask), and what is not padding (multi-hot labels, floats, short rows, full rows)."""

from __future__ import annotations

import torch

from gpubottle.probes.batch_leaves import padding


def _ids(lengths: list[int], length: int = 32, pad: int = 0) -> torch.Tensor:
    t = torch.full((len(lengths), length), pad, dtype=torch.long)
    for i, n in enumerate(lengths):
        t[i, :n] = torch.arange(1, n + 1) + 100
    return t


def test_token_ids_padded_to_a_fixed_length_give_the_share_and_the_rows_lengths() -> None:
    ids = _ids([10, 20, 5, 6])
    assert padding((ids, torch.tensor([0, 1, 0, 1]))) == [round(1 - 41 / 128, 4), 32, 6, 20]
    mask = (ids != 0).long()  # an attention mask pads the same positions with 0
    assert padding({"input_ids": ids, "attention_mask": mask})[0] == round(1 - 41 / 128, 4)
    assert padding(_ids([3, 4, 5, 32], pad=1))[:2] == [round(1 - 44 / 128, 4), 32]  # another pad id


def test_what_is_not_padding_is_not_read_as_padding() -> None:
    torch.manual_seed(0)
    multi_hot = (torch.rand(16, 100) < 0.03).long()  # labels: their zeros are scattered
    assert padding(multi_hot) is None
    assert padding(torch.zeros(4, 32)) is None  # floats
    assert padding(_ids([3, 4], length=8)) is None  # shorter than PAD_MIN_LENGTH
    full = padding(_ids([32, 32, 32, 32]))  # every row ends with the same id (an EOS): one position
    assert full is not None and full[0] < 0.05
    assert padding(torch.zeros(4, 32, dtype=torch.long)) is None  # all one value: nothing used


def test_the_probe_counts_a_loaders_first_batch_and_reads_the_padding_of_its_next_three() -> None:
    """A batch padded to its own longest sample has a length that varies from batch to batch: the
    first PAD_BATCHES batches' padding is kept (which fix removes it), their leaves counted once."""
    from gpubottle.probes.batch_leaves import PAD_BATCHES, BatchLeavesProbe

    class Emitted:
        def __init__(self) -> None:
            self.records: list = []

        def emit(self, rec: object) -> None:
            self.records.append(rec)

    rec = Emitted()
    probe = BatchLeavesProbe(rec)  # type: ignore[arg-type]
    for n in (20, 24, 18, 30, 26, 22):
        probe.see(1, (_ids([n - 3, n, 5], length=n), torch.tensor([0, 1, 0])))
    probe.see(2, torch.zeros(4, 3))  # another loader: nothing padded, counted all the same
    first, *rest = [r for r in rec.records if r.loader == 1]
    assert (first.tensors, first.objects) == (2, 0) and first.padding[1] == 20
    assert [r.padding[1] for r in rest] == [24, 18, 30] and len(rest) == PAD_BATCHES - 1
    assert all(r.tensors == -1 for r in rest)  # (not counted again)
    assert [(r.tensors, r.padding) for r in rec.records if r.loader == 2] == [(1, None)]
    assert 1 in probe.seen and 2 not in probe.seen
