"""A self-contained HTML report's checks, for the tests that render one: tags balanced, nothing
fetched or linked out, the SVGs and scripts counted."""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"meta", "br", "line", "rect", "polyline", "img", "link", "input", "hr"}


class HtmlChecker(HTMLParser):
    """Tags balanced, every src/href local, and the SVGs counted."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.urls: list[str] = []
        self.svgs = 0
        self.script = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if k in ("src", "href")]
        self.svgs += tag == "svg"
        self.script += tag == "script"
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [v or "" for k, v in attrs if k in ("src", "href")]

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()


def check_html(html: str) -> HtmlChecker:
    c = HtmlChecker()
    c.feed(html)
    c.close()
    assert not c.errors and not c.stack, (c.errors, c.stack)
    assert not [u for u in c.urls if re.match(r"^(https?:)?//", u)], c.urls
    assert "http://" not in html and "https://" not in html  # nothing fetched, nothing linked out
    return c
