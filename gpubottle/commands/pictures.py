"""Writing the pictures: RUN_DIR/index.html and RUN_DIR/timeline.json after every run, and the HTML
report wherever `--html` asks. A picture that cannot be made is a note on stderr, never a failure
of the run or the report."""

from __future__ import annotations

import os
import sys

from gpubottle.analysis.series import RunSeries, run_series
from gpubottle.collect.events import ChildEvents, read_events
from gpubottle.errors import EXIT_USAGE, GpubottleError
from gpubottle.render.html import render_html
from gpubottle.render.timeline import timeline, write_timeline
from gpubottle.report import Report
from gpubottle.rundir import RunDir


def _series(report: Report, events: ChildEvents | None = None
            ) -> tuple[RunSeries | None, RunDir | None]:
    path = report.evidence.run.run_dir
    if report.evidence.run.kind != "run" or not path or not os.path.isdir(path):
        return None, None
    rd = RunDir(path)
    if not rd.is_run():
        return None, None
    rank = report.evidence.shown_rank
    if report.evidence.ranks and rank is not None:  # a job: the charts of the rank shown
        events = read_events(rd.rank_events(rank))
    try:
        return run_series(rd, events if events is not None else read_events(rd.events)), rd
    except Exception as exc:  # the charts over time are missing; the rest of the page is not
        print(f"gpubottle: no charts over time ({exc!r})", file=sys.stderr)
        return None, rd


def write_html(report: Report, path: str, series: RunSeries | None = None) -> None:
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            render_html(report, fh, series)
    except OSError as exc:
        raise GpubottleError(f"cannot write {path}: {exc.strerror}", EXIT_USAGE) from exc


def write_pictures(report: Report, html_path: str | None = None, in_run_dir: bool = True,
                   events: ChildEvents | None = None) -> None:
    """index.html and timeline.json into the run directory (when the report is a run's), and the
    HTML report at html_path (when asked). `events`: the run's, when already read."""
    series, rd = _series(report, events)
    if rd is not None and in_run_dir:
        try:
            write_html(report, os.path.join(rd.path, "index.html"), series)
            if series is not None:
                rank = report.evidence.shown_rank
                trace = (rd.rank_window(rank) if report.evidence.ranks and rank is not None
                         else rd.window_trace)
                window = trace if os.path.isfile(trace) else None
                with open(os.path.join(rd.path, "timeline.json"), "w") as fh:
                    write_timeline(timeline(series, series.pid, window), fh)
        except Exception as exc:  # never lose a report to a picture
            print(f"gpubottle: could not write the pictures ({exc!r})", file=sys.stderr)
    if html_path:
        write_html(report, html_path, series)
