"""One vocabulary: the rules, the gate and the README use the same list of findings."""

from __future__ import annotations

import re

from conftest import ROOT

from gpubottle import vocabulary as v


def test_readme_names_every_finding():
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in (*v.FINDINGS, v.INCONCLUSIVE) if f"`{name}`" not in readme]
    assert not missing


def test_rules_spell_findings_only_through_the_vocabulary():
    literal = re.compile(r'Finding\(\s*"')
    for path in (ROOT / "gpubottle" / "rules").glob("*.py"):
        assert not literal.search(path.read_text()), path.name
    names = re.findall(r"\bv\.([A-Z_]+)\b", "".join(
        p.read_text() for p in (ROOT / "gpubottle" / "rules").glob("*.py")))
    assert names and all(hasattr(v, n) for n in names)


def test_every_meaning_is_written_once():
    assert set(v.MEANING) == set(v.FINDINGS)
    assert len(set(v.FINDINGS)) == len(v.FINDINGS)
