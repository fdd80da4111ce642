"""The ``"seed_claims"`` rows a case study writes into its results JSON, and their Markdown.

A row (the convention ``benchmarks/seed_claims.py`` collects)::

    {"method", "paper", "claim", "verdict", "measured", "protocol", "paper_protocol", "differences"}

``verdict`` is ``"reproduced"``, ``"partly"`` or ``"not"``, computed by the study's own verdict
function from the numbers in the JSON; the rule is stated in ``protocol`` (fixed before the run).

``rerender(name, rows_fn, path)`` is the ``--from-json`` mode of the scripts whose full run is
expensive: it re-reads a committed results JSON, writes its ``"seed_claims"`` key from its numbers and
replaces the verdict section of the ``.md`` next to it (everything else in both files is kept).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

VERDICTS = ("reproduced", "partly", "not")
SECTION = "## Seed claims: verdicts from the numbers"


def count_rule(ok) -> str:
    """``reproduced`` if every case holds, ``partly`` if some do, ``not`` if none (or no case)."""
    ok = [bool(v) for v in ok]
    return "reproduced" if ok and all(ok) else ("partly" if any(ok) else "not")


def row(method, paper, claim, verdict, measured, protocol, paper_protocol, differences, family=None) -> dict:
    """One seed-claim row; ``family`` is the section of the seed-claims table (seed_claims.FAMILIES)."""
    if verdict not in VERDICTS:
        raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    out = {"method": method, "paper": paper, "claim": claim, "verdict": verdict, "measured": measured,
           "protocol": protocol, "paper_protocol": paper_protocol, "differences": differences}
    if family:
        out["family"] = family
    return out


FROM_JSON_NOTE = ("Computed by `--from-json` from the numbers of the committed run: the rules below were written "
                  "from the papers' claims after that run existed (no rule had been stated), and were not tuned to "
                  "its numbers; a fresh run applies the same rules.")


def section(rows: list[dict], note: str = "") -> str:
    """The Markdown verdict section: one block per claim (verdict, numbers, rule and protocol, the
    paper's protocol, the differences)."""
    out = [SECTION, ""] + ([note, ""] if note else [])
    for r in rows:
        out += [f"**{r['method']}: {r['claim']}: {r['verdict']}.**", "",
                f"- Measured: {r['measured']}",
                f"- Protocol and rule: {r['protocol']}",
                f"- Paper's protocol ({r['paper']}): {r['paper_protocol']}",
                f"- Differences: {r['differences']}", ""]
    return "\n".join(out)


def with_section(markdown: str, rows: list[dict], note: str = "") -> str:
    """``markdown`` with its verdict section (if any) replaced by the section of ``rows``."""
    head = markdown.split(SECTION, 1)[0].rstrip()
    return head + "\n\n" + section(rows, note)


def rerender(rows_fn: Callable[[dict], list[dict]], path, md_path=None) -> list[dict]:
    """Re-read the results JSON at ``path``, write ``"seed_claims"`` from ``rows_fn(doc)`` into it and
    the verdict section into the ``.md`` beside it (or ``md_path``); returns the rows."""
    path = Path(path)
    doc = json.loads(path.read_text())
    doc.pop("seed_claims", None)
    rows = rows_fn(doc)
    doc["seed_claims"] = rows
    path.write_text(json.dumps(doc, indent=2))
    md_path = Path(md_path) if md_path else path.with_suffix(".md")
    md = md_path.read_text() if md_path.exists() else ""
    md_path.write_text(with_section(md, rows, FROM_JSON_NOTE))
    print(f"wrote seed_claims into {path} and the verdict section into {md_path}")
    print(section(rows, FROM_JSON_NOTE))
    return rows
