"""A Python list searched value by value at the user's line (`vocab.index(w)`, `w in vocab`,
`pos.remove(p)`), read from the source (analysis/list_search.py): what a loader's hot function or
a sampler's time goes to, with a dict, a set or one shuffle as the remedy. A set, a dict, a string
or a range searched alike is not (a hash lookup, or no list at all)."""

from __future__ import annotations

from pathlib import Path

from gpubottle.analysis.list_search import ListSearch, list_search
from gpubottle.analysis.source_kinds import list_search_kind
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import Frame, ThreadSamples
from gpubottle.analysis.work_kinds import LIST_REMOVE, LIST_SEARCH, remedy, wasted

SCRIPT = """import random

vocab = ["<pad>", "<unk>"] + [f"w{i}" for i in range(5000)]
seen = set(vocab)
index = {w: i for i, w in enumerate(vocab)}
name = "abcdef"
alias = vocab
later = sorted(vocab)


class Texts:
    def __init__(self, labels):
        self.labels = labels.tolist()
        self.words = open("words.txt").read().split()

    def encode(self, words):
        ids = [vocab.index(w) if w in vocab else 1 for w in words]
        return ids

    def balanced(self):
        pos = [i for i, y in enumerate(self.labels) if y == 1]
        out = []
        while pos:
            p = random.choice(pos)
            pos.remove(p)
            out.append(p)
        return out

    def fast(self, w, k):
        a = w in seen
        b = index.get(w)
        c = "a" in name
        d = k in range(10)
        e = self.labels.count(1)
        f = w not in alias
        g = later.index(w)
        h = w in self.words
        return a, b, c, d, e, f, g, h
"""


def _write(tmp_path: Path) -> str:
    path = tmp_path / "texts.py"
    path.write_text(SCRIPT)
    return str(path)


def _at(text: str) -> int:
    return next(i for i, s in enumerate(SCRIPT.splitlines(), 1) if text in s)


def test_searches_of_lists_the_file_binds_are_found(tmp_path: Path) -> None:
    path = _write(tmp_path)
    found = list_search(path, _at("vocab.index(w)"))
    assert found in (ListSearch("vocab", "in"), ListSearch("vocab", "index")), found
    assert list_search(path, _at("pos.remove(p)")) == ListSearch("pos", "remove")
    assert list_search(path, _at("e = self.labels.count(1)")) == ListSearch("self.labels", "count")
    assert list_search(path, _at("f = w not in alias")) == ListSearch("alias", "in")  # bound to a list name
    assert list_search(path, _at("g = later.index(w)")) == ListSearch("later", "index")  # sorted()
    assert list_search(path, _at("h = w in self.words")) == ListSearch("self.words", "in")  # str.split()
    assert list_search_kind(path, _at("vocab.index(w)")) == LIST_SEARCH
    assert list_search_kind(path, _at("pos.remove(p)")) == LIST_REMOVE


def test_hash_lookups_strings_ranges_and_other_lines_are_not(tmp_path: Path) -> None:
    path = _write(tmp_path)
    for text in ("a = w in seen", "b = index.get(w)", 'c = "a" in name', "d = k in range(10)",
                 "p = random.choice(pos)", "out.append(p)", "while pos:"):
        assert list_search(path, _at(text)) is None, text
    assert list_search(str(tmp_path / "missing.py"), 3) is None


def test_a_name_bound_to_a_set_anywhere_in_the_file_is_not_taken_for_a_list(tmp_path: Path) -> None:
    path = tmp_path / "both.py"
    path.write_text("xs = [1, 2, 3]\nxs = set(xs)\nok = 2 in xs\n")
    assert list_search(str(path), 3) is None


def test_a_list_handed_to_a_class_and_kept_by_a_tuple_assignment_is_a_list(tmp_path: Path) -> None:
    """/tmp/sw36/in_main_vocab.py: main() builds the vocabulary list and the dataset keeps it as
    `self.vocab, self.texts = vocab, texts`; its __getitem__'s `self.vocab.index(w)` was read as
    Python per element, after more workers."""
    path = tmp_path / "in_main.py"
    path.write_text("class Texts:\n"
                    "    def __init__(self, vocab, texts):\n"
                    "        self.vocab, self.texts = vocab, texts\n"
                    "    def get(self, w):\n"
                    "        return self.vocab.index(w) if w in self.vocab else 0\n"
                    "def main():\n"
                    "    vocab = [f'w{i}' for i in range(9)]\n"
                    "    texts, other = {}, 3\n"
                    "    return Texts(vocab, texts)\n"
                    "def lookups(texts):\n"
                    "    return 'a' in texts\n")
    assert list_search(str(path), 5) in (ListSearch("self.vocab", "index"), ListSearch("self.vocab", "in"))
    assert list_search(str(path), 11) is None  # (`texts` bound to a dict by its tuple)


def test_a_dicts_list_searched_for_a_negative_is_a_list_search(tmp_path: Path) -> None:
    """A recommender's negative sampling (neg_samples.py): each user's seen items a list drawn by
    random.sample, `while neg in seen[u]:` a pass over up to 2,000 items per draw, read as the
    sample's "own lines" (the script 6.5 s, 4.7 s with sets). A dict of sets, or of
    anything else, is not."""
    path = tmp_path / "neg.py"
    path.write_text("import random\n"
                    "from collections import defaultdict\n"
                    "seen = {u: random.sample(range(900), 50) for u in range(10)}\n"
                    "hist = defaultdict(list)\n"
                    "sets = {u: set(v) for u, v in seen.items()}\n"
                    "counts = {u: 3 for u in range(10)}\n"
                    "def draw(u, neg):\n"
                    "    while neg in seen[u]:\n"
                    "        neg = random.randrange(900)\n"
                    "    return neg in hist[u], neg in sets[u], neg in counts[u]\n")
    assert list_search(str(path), 8) == ListSearch("seen[u]", "in")
    assert list_search(str(path), 10) == ListSearch("hist[u]", "in")  # defaultdict(list)
    other = tmp_path / "neg_sets.py"  # (read once a path: a new file)
    other.write_text(path.read_text().replace("neg in hist[u], ", ""))
    assert list_search(str(other), 10) is None  # a dict of sets, a dict of numbers: no list


def test_a_deque_drawn_from_or_indexed_inside_is_a_deque_index(tmp_path: Path) -> None:
    """A replay buffer in a collections.deque (deque_replay.py): random.sample of it, or a subscript
    by a drawn index, walks its blocks (541 us for 64 of 150,000 a step, from a list 57 us): how
    "deque", DEQUE_INDEX. Its ends (buffer[-1], buffer[0]), its slices, its append, and a name
    bound to a deque and later to a list are not."""
    from gpubottle.analysis.source_kinds import deque_kind
    from gpubottle.analysis.work_kinds import DEQUE_INDEX

    path = tmp_path / "dqn.py"
    path.write_text("import random\n"
                    "import collections\n"
                    "from collections import deque\n"
                    "buffer = deque(maxlen=1000)\n"
                    "self_like = collections.deque()\n"
                    "mixed = deque()\n"
                    "mixed = list(mixed)\n"
                    "batch = random.sample(buffer, 64)\n"
                    "picked = [self_like[i] for i in range(3)]\n"
                    "last, first = buffer[-1], buffer[0]\n"
                    "buffer.append(1)\n"
                    "other = random.sample(mixed, 2)\n"
                    "one = random.choice(buffer)\n")
    assert list_search(str(path), 8) == ListSearch("buffer", "deque")
    assert list_search(str(path), 9) == ListSearch("self_like", "deque")
    assert list_search(str(path), 13) == ListSearch("buffer", "deque")
    assert all(list_search(str(path), n) is None for n in (4, 10, 11, 12))
    assert deque_kind(str(path), 8) == DEQUE_INDEX == list_search_kind(str(path), 8)
    assert deque_kind(str(path), 10) is None
    assert wasted(DEQUE_INDEX) and "ring" in (remedy(DEQUE_INDEX) or "")


def test_the_remedies_remove_the_work_and_say_what_replaces_it() -> None:
    assert wasted(LIST_SEARCH) and wasted(LIST_REMOVE)  # said before more workers
    assert "ids = {v: i for i, v in enumerate(xs)}" in (remedy(LIST_SEARCH) or "")
    assert "random.shuffle" in (remedy(LIST_REMOVE) or "")


def test_a_loaders_hot_function_searching_a_list_is_named_at_that_line(tmp_path: Path) -> None:
    """The main process loading batches itself, its samples in __getitem__'s comprehension whose
    search is C (no frame beneath the user's line): the function is said with the kind, at the
    comprehension's line, not at its def."""
    path = _write(tmp_path)
    site = "/venv/lib/python3.11/site-packages/torch/utils/data"
    loader = [Frame("_BaseDataLoaderIter.__next__", f"{site}/dataloader.py", 733),
              Frame("_SingleProcessDataLoaderIter._next_data", f"{site}/dataloader.py", 789),
              Frame("_MapDatasetFetcher.fetch", f"{site}/_utils/fetch.py", 55)]
    line = _at("vocab.index(w)")
    stack = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 40), *loader,
             Frame("Texts.encode", path, line), Frame("Texts.encode.<locals>.<listcomp>", path, line)]
    st = stack_evidence({1: ThreadSamples(1, [stack] * 30)}, 1, set(), None)
    assert st.main_hot, st
    top = st.main_hot[0]
    assert top.kind == LIST_SEARCH and top.location.endswith(f"texts.py:{line}"), top


def test_a_sampler_removing_from_a_list_is_said_as_that_at_the_remove(tmp_path: Path) -> None:
    """The DataLoader asking the user's sampler for indices (_next_index), its time on the
    list.remove line: the sampler's kind, named at that line."""
    path = _write(tmp_path)
    dl = "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py"
    line = _at("pos.remove(p)")
    stack = [Frame("_run_code", "<frozen runpy>", 88), Frame("<module>", path, 40),
             Frame("_BaseDataLoaderIter.__next__", dl, 733),
             Frame("_SingleProcessDataLoaderIter._next_data", dl, 788),
             Frame("_BaseDataLoaderIter._next_index", dl, 715), Frame("Texts.balanced", path, line)]
    st = stack_evidence({1: ThreadSamples(1, [stack] * 30)}, 1, set(), None)
    assert st.main_sampler is not None, st
    assert st.main_sampler.kind == LIST_REMOVE and st.main_sampler.location.endswith(f"texts.py:{line}")
