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
