"""The documentation's shape: one current page per kernel variant with the same sections and at
most ~400 lines, each variant's README short and pointing at an existing page, and a README whose
standings fit one table (issue 59, "a documentation diet")."""

import re

from conftest import ROOT

KERNEL_PAGES = sorted((ROOT / "docs" / "kernels").glob("*.md"))
VARIANT_READMES = sorted((ROOT / "src" / "kernels").glob("*/*/README.md"))


def headings(text):
    return re.findall(r"^## (.+)$", text, flags=re.M)


def test_every_kernel_page_is_one_current_page():
    assert KERNEL_PAGES, "docs/kernels holds no page"
    for page in KERNEL_PAGES:
        text = page.read_text()
        lines = text.count("\n")
        assert lines <= 400, f"{page.name}: {lines} lines (a kernel page keeps at most ~400)"
        found = headings(text)
        for wanted in ("Design", "Roofline", "Measured", "What to try next"):
            assert any(h.startswith(wanted) for h in found), f"{page.name}: no '## {wanted}' section"
        assert any(h in ("Steps", "Runs") for h in found), f"{page.name}: no '## Steps' (or '## Runs') section"


def test_mla_decode_keeps_a_correctness_section():
    assert "Correctness" in headings((ROOT / "docs" / "kernels" / "mla_decode_v1_paged.md").read_text())


def test_every_variant_readme_is_short_and_names_its_page():
    assert VARIANT_READMES
    for readme in VARIANT_READMES:
        text = readme.read_text()
        where = readme.relative_to(ROOT)
        assert text.count("\n") <= 40, f"{where}: {text.count(chr(10))} lines (a variant README keeps at most ~40)"
        pages = re.findall(r"docs/kernels/([a-z0-9_]+\.md)", text)
        assert pages, f"{where} names no docs/kernels page"
        for name in pages:
            assert (ROOT / "docs" / "kernels" / name).is_file(), f"{where} names docs/kernels/{name}, which does not exist"


def test_readme_keeps_the_commands_first_and_one_standings_table():
    text = (ROOT / "README.md").read_text()
    assert text.count("\n") <= 150, f"README.md: {text.count(chr(10))} lines (at most ~150)"
    head = text[:400]
    assert "make run" in head and "make test" in head, "the two commands open the README"
    section = re.search(r"^## Where it stands.*?(?=^## )", text, flags=re.M | re.S)
    assert section, "README.md has no '## Where it stands' section"
    tables = re.findall(r"(?:^\|.*\|\n)+", section.group(0), flags=re.M)
    assert len(tables) == 1, f"'Where it stands' holds {len(tables)} tables, not one"
    assert tables[0].count("\n") <= 25, "the standings table is longer than 25 lines"
