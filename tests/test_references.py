"""Every reference the code cites resolves inside the repository (team standard 17.6 / 18.2).

* No internal references to the specification's source documents ("seed 004, Thm 5.3") anywhere
  in the package or in the resources shipped with it: users read these texts in the report, the
  GUI and the CLI, and "seed 004" means nothing outside the team.  Cite authors and year instead.
* Every "Author YEAR" ("A & B YEAR", "A, B & C YEAR", "A et al. YEAR") cited in the sources of
  dpstudio/engine/mechanisms/ names an entry of docs/references.md: one entry that contains every
  cited surname and the year.  Initialisms ("CKS 2020") must appear verbatim in references.md.
* Every ``docs/<name>.md`` cited in the package's sources (docstrings, comments, strings) and in
  docs/*.md exists; a section given with it must exist in that file: ``docs/x.md §Heading words``
  (the words run to ``; , . ( ) "`` or the end of the line) or ``docs/x.md, "Heading words"`` must
  be the start of a heading of x.md, and ``docs/errata.md, E4`` a row of the errata table.
* No shipped file mentions "BRIEF" (the team's internal specification, not part of the product).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpstudio"
RESOURCES = ROOT / "resources"  # shipped beside the package (see dpstudio/resources.py)
REFERENCES = ROOT / "docs" / "references.md"
CITING = sorted((PACKAGE / "engine" / "mechanisms").glob("*.py"))
DOCS = ROOT / "docs"

# "docs/x.md", optionally followed by "§Heading words", ', "Heading words"' or ", E4"
DOC_REF = re.compile(
    r"\bdocs/((?:[\w.-]+/)*[\w.-]+\.md)"
    r'(?:,?[ \t]*\n?[ \t]*§[ \t]*([^;,.()"§\n]+)|,\s*"([^"]{1,200})"|,\s*(E\d+)\b)?'
)
# the internal specification document ("BRIEF 3.2", "BRIEF section 4", "BRIEF.md")
BRIEF = re.compile(r"\bBRIEF\b")

# "seed 004", "Seed 002", "seed004", "seed_003", "seeds 001"
INTERNAL = re.compile(r"\bseeds?[ _]?0\d\d\b", re.IGNORECASE)

_NAME = r"[A-Z][A-Za-z]*[a-z](?:-[A-Z][A-Za-z]*[a-z])?"
CITATION = re.compile(rf"\b((?:{_NAME}, )*{_NAME}(?: et al\.| & {_NAME})?),? ((?:19|20)\d\d)\b")
INITIALISM = re.compile(r"\b[A-Z]{2,5} (?:19|20)\d\d\b")
# capitalised words that can stand before a year without being an author
NOT_AUTHORS = {"Since", "In", "From", "Before", "After", "Until", "Version", "Challenge"}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _read_text(path: Path) -> str | None:
    data = path.read_bytes()
    if path.suffix == ".qm":  # compiled Qt translations keep their strings in UTF-16
        return data.decode("utf-16-be", errors="ignore") + "\n" + data.decode("latin-1")
    if b"\0" in data[:4096]:
        return None  # other binary files carry no text
    return data.decode("utf-8", errors="replace")


def shipped_files() -> list[Path]:
    return [
        p
        for top in (PACKAGE, RESOURCES)
        for p in sorted(top.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    ]


def internal_references(files, root: Path = ROOT) -> list[str]:
    hits = []
    for p in files:
        text = _read_text(p)
        for i, line in enumerate((text or "").splitlines(), 1):
            hits += [f"{p.relative_to(root)}:{i}: {m.group(0)!r}" for m in INTERNAL.finditer(line)]
    return hits


def reference_entries(text: str) -> list[str]:
    """The bullet entries of references.md, each with its continuation lines joined on."""
    entries: list[str] = []
    for line in text.splitlines():
        if line.startswith("- "):
            entries.append(line[2:])
        elif line.startswith("  ") and entries:
            entries[-1] += " " + line.strip()
    return [_flat(e) for e in entries]


def citations(text: str) -> dict[tuple[tuple[str, ...], str], str]:
    """{(surnames, year): as cited} in ``text``; a citation may break across lines."""
    out = {}
    for m in CITATION.finditer(_flat(text)):
        names = tuple(n for n in re.split(r", | & | et al\.", m.group(1)) if n)
        if names[0] not in NOT_AUTHORS:
            out[(names, m.group(2))] = m.group(0)
    return out


def unresolved(files, references_text: str, root: Path = ROOT) -> list[str]:
    entries = reference_entries(references_text)
    flat_refs = _flat(references_text)
    missing = []
    for p in files:
        text = p.read_text(encoding="utf-8")
        for (names, year), cited in sorted(citations(text).items()):
            if not any(year in e and all(n in e for n in names) for e in entries):
                missing.append(f"{p.relative_to(root)}: {cited}")
        for abbr in sorted(set(INITIALISM.findall(_flat(text)))):
            if abbr not in flat_refs:
                missing.append(f"{p.relative_to(root)}: {abbr} (initialism)")
    return missing


def _norm(text: str) -> str:
    """Lower case, no backticks or comment markers, single spaces (for matching headings)."""
    return re.sub(r"\s+", " ", re.sub(r"\s#+\s", " ", text.replace("`", ""))).strip().lower()


def doc_headings(path: Path) -> list[str]:
    return [_norm(line.lstrip("#")) for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]


def _starts_heading(cited: str, headings: list[str]) -> bool:
    """``cited`` is the start of a heading, ending at a word boundary."""
    c = _norm(cited)
    return bool(c) and any(h == c or (h.startswith(c) and not h[len(c)].isalnum()) for h in headings)


def doc_reference_problems(files, docs: Path = DOCS, root: Path = ROOT) -> list[str]:
    """Citations of docs files, sections or errata entries that do not exist."""
    problems = []
    for p in files:
        text = _read_text(p) or ""
        for m in DOC_REF.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            where = f"{p.relative_to(root)}:{line}"
            name, section, quoted, entry = m.groups()
            target = docs / name
            if not target.is_file():
                problems.append(f"{where}: docs/{name} does not exist")
                continue
            cited = section if section is not None else quoted
            if cited is not None and not _starts_heading(cited, doc_headings(target)):
                problems.append(f"{where}: docs/{name} has no heading {_norm(cited)!r}")
            if entry is not None and not re.search(
                rf"^\|\s*{entry}\s*\|", target.read_text(encoding="utf-8"), re.MULTILINE
            ):
                problems.append(f"{where}: docs/{name} has no entry {entry}")
    return problems


def brief_mentions(files, root: Path = ROOT) -> list[str]:
    hits = []
    for p in files:
        text = _read_text(p)
        for i, line in enumerate((text or "").splitlines(), 1):
            if BRIEF.search(line):
                hits.append(f"{p.relative_to(root)}:{i}: {line.strip()[:90]}")
    return hits


def test_no_internal_source_references_in_package_or_resources():
    hits = internal_references(shipped_files())
    assert not hits, "internal references; cite authors and year (docs/references.md):\n" + "\n".join(hits)


def test_mechanism_citations_resolve_in_references_md():
    assert len(CITING) >= 5, "mechanism modules not found"
    missing = unresolved(CITING, REFERENCES.read_text(encoding="utf-8"))
    assert not missing, "cited but not in docs/references.md:\n" + "\n".join(missing)


def test_docs_references_in_the_package_resolve():
    sources = [p for p in shipped_files() if p.suffix == ".py" and p.is_relative_to(PACKAGE)]
    assert len(sources) > 50, "package sources not found"
    problems = doc_reference_problems(sources)
    assert not problems, "cited docs file or section missing:\n" + "\n".join(problems)


def test_docs_cross_references_resolve():
    problems = doc_reference_problems(sorted(DOCS.glob("*.md")))
    assert not problems, "cited docs file or section missing:\n" + "\n".join(problems)


def test_no_mention_of_the_internal_brief():
    hits = brief_mentions(shipped_files())
    assert not hits, (
        "the internal brief is cited; cite the paper (docs/references.md) or the "
        "docs section instead:\n" + "\n".join(hits)
    )


# ---- the checks catch what they are meant to catch -------------------------------------------


def test_internal_reference_pattern_catches_the_old_forms(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        '"""Seed 004 Ex. 4.9."""\nx = "(seed 002 Prop. 3.0.2)"  # seed003\n'
        "RandomSource(seed=0)  # a fixed seed 1; seed 0 is fine\n",
        encoding="utf-8",
    )
    assert internal_references([f], tmp_path) == ["m.py:1: 'Seed 004'", "m.py:2: 'seed 002'", "m.py:2: 'seed003'"]


def test_citation_check_lists_what_is_missing(tmp_path):
    refs = (
        "# References\n\n- Jazbec, M. (2018). A general definition.\n"
        "- Canonne, C. L., Kamath, G. & Steinke, T. (2020). The discrete Gaussian.\n"
        "  (Cited as CKS 2020.)\n- Minami, K. (2015). Note. Published as: Minami, K., Arai, H.\n"
        "  (2016). Differential privacy without sensitivity.\n"
    )
    ok = tmp_path / "ok.py"
    ok.write_text(
        '"""Jazbec 2018, Thm 5.3; Canonne, Kamath &\n    Steinke 2020; CKS 2020 Alg. 1;\n'
        '    Minami et al. 2016; Minami 2015, Thm 8."""\n',
        encoding="utf-8",
    )
    bad = tmp_path / "bad.py"
    bad.write_text('"""Jazbec 2019; Kamath & Smith 2020; Dwork et al. 2006; HRW 2013."""\n', encoding="utf-8")
    assert unresolved([ok], refs, tmp_path) == []
    assert unresolved([bad], refs, tmp_path) == [
        "bad.py: Dwork et al. 2006",
        "bad.py: Jazbec 2019",
        "bad.py: Kamath & Smith 2020",
        "bad.py: HRW 2013 (initialism)",
    ]


def test_docs_reference_check_lists_what_is_missing(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text(
        "# A\n\n## DP quantiles — `dp_quantile`\n\n### Exact RDP of the discrete Laplace\n", encoding="utf-8"
    )
    (docs / "errata.md").write_text("| # | x |\n|---|---|\n| E4 | y |\n", encoding="utf-8")
    ok = tmp_path / "ok.py"
    ok.write_text(
        '"""See docs/a.md §DP quantiles; docs/a.md, "Exact RDP of the discrete Laplace";\n'
        "(docs/a.md §Exact RDP of the\n    discrete Laplace) docs/errata.md, E4 and docs/a.md.\n"
        '"""\nx = 1  # docs/a.md §DP quantiles (see there)\n',
        encoding="utf-8",
    )
    bad = tmp_path / "bad.py"
    bad.write_text(
        '"""docs/b.md; docs/a.md §Quantiles; docs/a.md §DP quantiles and more;\n'
        'docs/a.md, "Exact RDP of Gaussians"; docs/errata.md, E5; ../shared/docs/BRIEF.md"""\n',
        encoding="utf-8",
    )
    assert doc_reference_problems([ok], docs, tmp_path) == []
    assert doc_reference_problems([bad], docs, tmp_path) == [
        "bad.py:1: docs/b.md does not exist",
        "bad.py:1: docs/a.md has no heading 'quantiles'",
        "bad.py:1: docs/a.md has no heading 'dp quantiles and more'",
        "bad.py:2: docs/a.md has no heading 'exact rdp of gaussians'",
        "bad.py:2: docs/errata.md has no entry E5",
        "bad.py:2: docs/BRIEF.md does not exist",
    ]


def test_brief_check_catches_the_forms_used(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        '"""Ledger (BRIEF 3.9)."""\n# BRIEF section 4\nx = "see BRIEF.md"\n# a brief note; briefly; DEBRIEFED\n',
        encoding="utf-8",
    )
    assert [h.split(":")[1] for h in brief_mentions([f], tmp_path)] == ["1", "2", "3"]
