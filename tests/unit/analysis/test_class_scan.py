"""analysis/class_scan.py on sources: a dataset method that compares every label it holds with a
sample's own (a comprehension over them, np.where / nonzero of a comparison) scans them for each
sample; a comparison of the sample's own values, or of self's with self's, does not."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.class_scan import class_scan

SOURCE = """import numpy as np


class Pairs:
    def __getitem__(self, i):
        y = self.labels[i]
        same = [j for j in range(len(self.labels)) if self.labels[j] == y and j != i]
        others = [j for j, l in enumerate(self.labels) if l != y]
        neg = np.random.choice(np.where(self.labels != y)[0])
        pos = (self.targets == y).nonzero()
        mask = [v for v in self.rows[i] if v == y]
        fixed = np.where(self.labels == self.labels[0])[0]
        mine = np.where(self.rows[i] == y)[0]
        return same, others, neg, pos, mask, fixed, mine


def free(labels, y):
    return [j for j in range(len(labels)) if labels[j] == y]
"""


def test_scans_of_every_label_for_a_samples_class_are_found(tmp_path: Path) -> None:
    path = str(tmp_path / "ds.py")
    Path(path).write_text(SOURCE)
    found = [n for n in range(1, 19) if class_scan(path, n)]
    # (the sample's own row's values, self's against self's, and no dataset's method: not scans)
    assert found == [7, 8, 9, 10], found
