"""A stand-in for the probes' Recorder in unit tests: it keeps what the probes emit, in order."""

from __future__ import annotations

from typing import Any


class ListRecorder:
    active = True

    def __init__(self) -> None:
        self.records: list[Any] = []

    def emit(self, rec: Any) -> None:
        self.records.append(rec)
