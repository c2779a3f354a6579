"""A database queried for every sample (analysis/db_queries.py): the DB-API drivers run the query
in C, so py-spy's stack ends at the user's line and its source says what the time goes to. The
statements are run here against a real sqlite3 database first, so the shapes tested are ones that
work."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from stack_frames import FORWARD, LOADER

from gpubottle.analysis.db_queries import db_query
from gpubottle.analysis.loop_time import named_time
from gpubottle.analysis.stack_users import stack_evidence
from gpubottle.analysis.stacks import Frame, ThreadSamples
from gpubottle.analysis.work_kinds import DB_QUERY, remedy, wasted

SCRIPT = '''import sqlite3
import torch


class Rows(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path, self.con = path, None
        self.cur = sqlite3.connect(path).cursor()

    def __getitem__(self, i):
        if self.con is None:
            self.con = sqlite3.connect(self.path)
        row = self.con.execute("SELECT * FROM rows WHERE id = ?", (int(i),)).fetchone()
        x = torch.tensor(row[1:], dtype=torch.float32)
        return x

    def by_format(self, i, table):
        return self.con.execute(f"select x, y from {table} where id = {i}")

    def by_cursor(self, i):
        self.cur.execute(
            "SELECT x, y FROM rows WHERE id = ?", (i,))
        return self.cur.fetchone()

    def by_name(self, i, sql):
        return self.con.execute(sql, (i,)).fetchall()

    def write(self, i):
        self.con.execute("UPDATE rows SET x = 0 WHERE id = ?", (i,))
        self.con.execute("CREATE INDEX IF NOT EXISTS ix ON rows (x)")


con = sqlite3.connect(":memory:")
for step in range(3):
    r = con.execute("SELECT 1").fetchone()
'''


def _script(tmp_path: Path) -> str:
    path = str(tmp_path / "rows.py")
    Path(path).write_text(SCRIPT)
    return path


def test_statements_that_read_rows_are_queries(tmp_path: Path) -> None:
    db = tmp_path / "rows.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, x REAL, y REAL)")
    con.execute("INSERT INTO rows VALUES (1, 0.5, 1.5)")
    con.commit()
    ns: dict[str, object] = {}
    exec(compile(SCRIPT, "rows.py", "exec"), ns)  # (the shapes below run against sqlite3 as written)
    rows = ns["Rows"](str(db))  # type: ignore[operator]
    assert rows[1].tolist() == [0.5, 1.5]
    assert rows.by_format(1, "rows").fetchone() == (0.5, 1.5)
    assert rows.by_cursor(1) == (0.5, 1.5)
    assert rows.by_name(1, "SELECT y FROM rows WHERE id = ?") == [(1.5,)]
    rows.write(1)

    path = _script(tmp_path)
    assert db_query(path, 13)  # execute(SELECT ...).fetchone()
    assert db_query(path, 18)  # an f-string's statement, lower case
    assert db_query(path, 21) and db_query(path, 22)  # a call over two lines: either line
    assert db_query(path, 23)  # a cursor's fetch on its own
    assert db_query(path, 26)  # a statement held in a name, its rows fetched
    assert not db_query(path, 29) and not db_query(path, 30)  # writes read no rows
    assert not db_query(path, 14) and not db_query(path, 12)  # a tensor, a connection
    assert not db_query(str(tmp_path / "gone.py"), 13)




def test_a_dataset_querying_a_row_per_sample_is_named_by_that_kind(tmp_path: Path) -> None:
    path = _script(tmp_path)
    runpy = Frame("_run_code", "<frozen runpy>", 88)
    loop = [runpy, Frame("<module>", path, 34), *LOADER]
    query = [*loop, Frame("Rows.__getitem__", path, 13)]  # (sqlite3's execute is C: the line ends it)
    tensor = [*loop, Frame("Rows.__getitem__", path, 14)]
    stacks = [query] * 7 + [tensor] * 2 + [[runpy, Frame("<module>", path, 34), *FORWARD]]
    ev = stack_evidence({1: ThreadSamples(1, stacks)}, 1, set(), None)
    top = ev.main_hot[0]
    assert (top.function, top.kind, top.share) == ("Rows.__getitem__", DB_QUERY, 1.0), top
    # (the table read once, or a batch a query: work removed, said before more workers)
    assert wasted(DB_QUERY) and "__getitems__" in str(remedy(DB_QUERY))
    assert "WHERE id IN" in str(remedy(DB_QUERY)) and "Try it and time it" in str(remedy(DB_QUERY))


def test_a_loop_querying_a_row_a_step_is_named_by_that_kind(tmp_path: Path) -> None:
    path = _script(tmp_path)
    stacks = [[Frame("<module>", path, 35)]] * 6 + [[Frame("<module>", path, 33), *FORWARD]] * 4
    (top, *_) = named_time(stacks)
    assert top.kind == DB_QUERY, top
