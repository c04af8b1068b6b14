"""docs/knowledge/README.md, the knowledge base's index: every note listed once under its own title
(its first line), every entry a note that exists."""

import re

from conftest import ROOT

KNOWLEDGE = ROOT / "docs" / "knowledge"
ENTRY = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<file>[^)]+)\)$")


def index_entries():
    lines = (KNOWLEDGE / "README.md").read_text().splitlines()
    return [m.groupdict() for m in map(ENTRY.match, lines) if m]


def notes():
    return sorted(p for p in KNOWLEDGE.glob("*.md") if p.name != "README.md")


def test_every_note_is_listed_once():
    listed = [e["file"] for e in index_entries()]
    assert len(listed) == len(set(listed)), sorted(f for f in set(listed) if listed.count(f) > 1)
    assert sorted(set(listed)) == [p.name for p in notes()]


def test_every_entry_names_its_note_by_its_title():
    for e in index_entries():
        note = KNOWLEDGE / e["file"]
        assert note.is_file(), e["file"]
        first = note.read_text().splitlines()[0]
        assert first.startswith("# "), f"{e['file']}: the first line is not a title"
        assert first[2:].strip() == e["title"], f"{e['file']}: listed as '{e['title']}', titled '{first[2:]}'"


def test_the_index_has_groups():
    text = (KNOWLEDGE / "README.md").read_text()
    assert text.startswith("# Knowledge base\n")
    assert len(re.findall(r"^## ", text, flags=re.M)) >= 2
