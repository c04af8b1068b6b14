"""docs/knowledge: a few topic pages, each listed once in README.md under its own title (its first
line), each section a pattern in three parts (When / Evidence / Do), and every link to the
knowledge base from the docs naming a page that exists."""

import re

from conftest import ROOT

KNOWLEDGE = ROOT / "docs" / "knowledge"
ENTRY = re.compile(r"^- \[(?P<title>[^\]]+)\]\((?P<file>[^)]+)\)(: .*)?$")
MAX_PAGES = 15
PARTS = ("**When.**", "**Evidence.**", "**Do.**")


def index_entries():
    lines = (KNOWLEDGE / "README.md").read_text().splitlines()
    return [m.groupdict() for m in map(ENTRY.match, lines) if m]


def pages():
    return sorted(p for p in KNOWLEDGE.glob("*.md") if p.name != "README.md")


def sections(text):
    """(heading, body) of every '## ' section of a page."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def test_the_index_lists_every_page_once():
    text = (KNOWLEDGE / "README.md").read_text()
    assert text.startswith("# Knowledge base\n")
    listed = [e["file"] for e in index_entries()]
    assert listed, "docs/knowledge/README.md lists no page"
    assert len(listed) == len(set(listed)), sorted(f for f in set(listed) if listed.count(f) > 1)
    assert sorted(set(listed)) == [p.name for p in pages()]


def test_every_entry_names_its_page_by_its_title():
    for e in index_entries():
        page = KNOWLEDGE / e["file"]
        assert page.is_file(), e["file"]
        first = page.read_text().splitlines()[0]
        assert first.startswith("# "), f"{e['file']}: the first line is not a title"
        assert first[2:].strip() == e["title"], f"{e['file']}: listed as '{e['title']}', titled '{first[2:]}'"


def test_topics_stay_few():
    assert 2 <= len(pages()) <= MAX_PAGES, [p.name for p in pages()]


def test_every_section_says_when_evidence_and_what_to_do():
    for page in pages():
        found = sections(page.read_text())
        assert found, f"{page.name}: no '## ' section"
        for heading, body in found:
            missing = [p for p in PARTS if p not in body]
            assert not missing, f"{page.name}, '{heading}': missing {missing}"


def test_links_into_the_knowledge_base_name_existing_pages():
    # Every Markdown file but the changelog, which keeps the names the base had at each release.
    skip = {".git", ".deps", "build", "out"}
    docs = [p for p in ROOT.rglob("*.md")
            if p.name != "CHANGELOG.md" and not skip.intersection(p.relative_to(ROOT).parts)]
    assert KNOWLEDGE / "README.md" in docs
    for doc in docs:
        text = doc.read_text()
        targets = re.findall(r"docs/knowledge/([A-Za-z0-9_-]+\.md)", text)
        if doc.parent == KNOWLEDGE:
            targets += re.findall(r"\]\(([A-Za-z0-9_-]+\.md)\)", text)
        for name in targets:
            assert (KNOWLEDGE / name).is_file(), f"{doc.relative_to(ROOT)} links to docs/knowledge/{name}, which does not exist"
