"""The HTML report's rank table for a job, from evidence built in-process (the same table as for a
folder of ranks' traces)."""

from __future__ import annotations

import io

from factories import evidence
from html_check import check_html

from gpubottle.render.html import render_html


def test_a_jobs_ranks_get_a_row_each_with_the_shown_rank_marked():
    from gpubottle.evidence import RankEvidence
    from gpubottle.report import RankVerdict
    from gpubottle.rules import diagnose

    ev = evidence(step_s=0.05, wait_s=0.03)
    ev.ranks = [RankEvidence(rank=r, file=f"events-rank{r}.jsonl", steps=40, mean_step_s=0.05,
                             input_share=s, busy_share=0.1, node="<host>", pid=100 + r, workers=2,
                             workers_cores=1.5, memory_bytes=1 << 30)
                for r, s in ((0, 0.02), (1, 0.6))]
    ev.ranks[1].exception = "ValueError: <bad>"
    ev.shown_rank = 1
    buf = io.StringIO()
    render_html(diagnose(ev, [RankVerdict(r, "<host>", "data-starved") for r in (0, 1)]), buf, None)
    html = buf.getvalue()
    check_html(html)
    table = html[html.index("<h2>Ranks</h2>"):]
    assert table.count("<tr>") == 3 and "1 (shown)" in table and "&lt;host&gt;" in table
    assert "ValueError: &lt;bad&gt;" in table and "60%" in table

