"""Write ``docs/generated/seed_claims.rst``: the table of the seed papers' claims and what the case
studies found, from ``benchmarks/seed_claims.py`` (which reads ``benchmarks/results/*.json``).

Called by ``docs/_generate.py`` (``seed_claims()``); alone: ``python docs/_seed_claims.py``.
"""

from __future__ import annotations

import importlib.util
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "generated")
RESULTS = os.path.join(ROOT, "benchmarks", "results")

#: How each verdict reads in the table.
BADGE = {"reproduced": "**reproduced**", "partly": "**partly**", "not": "**not**", "not checked": "*not checked*"}


def _module():
    spec = importlib.util.spec_from_file_location("_fl_seed_claims", os.path.join(ROOT, "benchmarks", "seed_claims.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _text(value) -> str:
    """One cell of a list-table: one line, no characters rst reads as markup."""
    text = " ".join(str(value).split())
    if text in ("", "-"):
        return "\u2013"   # an en dash: a lone "-" would start a bullet list
    for ch in ("\\", "*", "`", "|", "_"):
        text = text.replace(ch, "\\" + ch)
    if re.match(r"([-+]|\(?(\d+|[A-Za-z#]|[ivxlcdm]+)[.)])( |$)", text):
        text = "\\" + text   # not a list or an enumeration
    return text


def _link(source: str) -> str:
    name = os.path.basename(source)[:-5] if source.endswith(".json") else ""
    if name and os.path.exists(os.path.join(RESULTS, f"{name}.json")):
        return f":doc:`{name} <benchmarks/{name}>`"
    return "-"


#: A commit as a link: set to e.g. "https://github.com/OWNER/featurelens/commit/{}" where the
#: repository is public; None renders the short hash (``git show HASH`` in a clone).
COMMIT_URL = None

#: How the rule's timing reads in the table.
TIMING = {"before": "fixed before the run", "after": "written after the run",
          "unknown": "committed with the run (order unknown)"}


def _commit(h: str) -> str:
    if not h:
        return "\u2013"
    return f"`{h} <{COMMIT_URL.format(h)}>`__" if COMMIT_URL else f"``{h}``"


def _rule(r) -> str:
    if r["verdict"] == "not checked" or not r.get("rule_commit"):
        return "\u2013"
    return (f"{TIMING.get(r['rule_timing'], r['rule_timing'])}: rule {_commit(r['rule_commit'])}, results "
            f"{_commit(r['results_commit'])} ({_text(r.get('rule_at', ''))})")


def _table(claims) -> list[str]:
    head = ["method", "claim", "verdict", "rule", "measured", "our protocol", "paper's protocol", "differences",
            "benchmark"]
    out = [".. list-table::", "   :header-rows: 1", "   :class: fl-table", "   :widths: 10 15 7 11 18 15 9 10 5", ""]
    body = [head]
    for c in claims:
        body.append([_text(c["method"]) + (f" ({_text(c['paper'])})" if c.get("paper") else ""),
                     _text(c["claim"]) + (f" *One verdict for {len(c['variants'])} protocols: "
                                          f"{_text(c['verdict_rule'])}.*" if c["variants"] else ""),
                     BADGE.get(c["verdict"], _text(c["verdict"])), _rule(c), _text(c["measured"]),
                     _text(c["protocol"]), _text(c["paper_protocol"]), _text(c["differences"]),
                     _link(c.get("source", ""))])
        for v in c["variants"]:
            body.append(["\u21b3 protocol variant", _text(os.path.basename(v["source"])),
                         VARIANT_BADGE.get(v["verdict"], _text(v["verdict"])), _rule(v), _text(v["measured"]),
                         _text(v["protocol"]), _text(v["paper_protocol"]), _text(v["differences"]),
                         _link(v.get("source", ""))])
    for row in body:
        out.append(f"   * - {row[0]}")
        out.extend(f"     - {c}" for c in row[1:])
    out.append("")
    return out


#: A protocol variant's verdict (it counts inside its claim's, not on its own).
VARIANT_BADGE = {"reproduced": "reproduced", "partly": "partly", "not": "not", "not checked": "not checked"}


def page(rows, counts, claims=None, timing=None, sections=None) -> str:
    """The page: one row per claim (its protocol variants as sub-rows under it), the seed papers'
    claims by family, then the identities and featurelens' own claims apart."""
    title = "Seed claims: reproduced, partly, not"
    sections = sections or {"seed": "Claims of the seed papers"}
    claims = claims if claims is not None else [dict(r, variants=[], verdict_rule="", section="seed") for r in rows]
    timing = timing or {}
    out = [title, "=" * len(title), "",
           "featurelens is built from a set of research papers (its seeds). Every claim of theirs that a case study "
           "in ``benchmarks/`` has rerun is a row below, with the verdict the study's numbers give, what was "
           "measured, the protocol here, the paper's protocol where it is known, and where the two differ. "
           "Generated by ``benchmarks/seed_claims.py`` (``python benchmarks/seed_claims.py`` prints the same table "
           "as Markdown, ``--json`` as JSON) from the files in ``benchmarks/results/``: each verdict is stored in "
           "its results file (``\"seed_claims\"``), computed there by the study's rule from the file's numbers, "
           "never typed by hand. A built seed method that no case study has checked is listed as *not checked*, "
           "with the reason. Data generators (``fl.datasets``) are checked by planted-structure tests, not listed; "
           "the RFM variant of GrokAlign (RFAM) is not built (its definition is not public).", "",
           "**One row per claim.** A claim run under several protocols (in several results files) has one verdict: "
           "the verdict of the protocol nearest the paper's decides, or, where none is, the variants combine "
           "(reproduced when all are, not when all are, partly otherwise); the variants follow as sub-rows, each "
           "with its own verdict.", "",
           "**When the rule was fixed.** The *rule* column says, from the commit history, whether the rule that "
           "decides the verdict was committed before the run whose numbers it judges (*fixed before the run*), "
           "after it (*written after the run*: the rule may have been chosen knowing the numbers), or in the same "
           "commit (the history cannot tell which came first); with the rule's commit and the commit of the "
           "numbers.", "",
           "Totals, by claim (protocol variants count once): " + ", ".join(f"{k} {v}" for k, v in counts.items())
           + f" ({sum(counts.values())} claims of the seed papers, {len(rows)} rows with the variants)."
           + (f" Rules fixed before their run: {timing.get('before', 0)}, written after it: {timing.get('after', 0)}, "
              f"committed with it: {timing.get('unknown', 0)} (one per row)." if timing else ""), ""]
    for section, heading in sections.items():
        mine = [c for c in claims if c.get("section", "seed") == section]
        if not mine:
            continue
        if section != "seed":
            out += [heading, "-" * len(heading), ""]
            out += [f"- {_text(c['method'])}: {_text(c.get('section_note', ''))}" for c in mine] + [""]
            out += _table(mine)
            continue
        for fam in dict.fromkeys(c["family"] for c in mine):
            out += [fam, "-" * len(fam), ""] + _table([c for c in mine if c["family"] == fam])
    return "\n".join(out) + "\n"


def seed_claims(out: str = OUT) -> str:
    """Write ``<out>/seed_claims.rst`` (only when it changed) and return its path."""
    mod = _module()
    rows = mod.collect(RESULTS)
    text = page(rows, mod.counts(rows), mod.claims(rows), mod.timing_counts(rows), mod._claims.SECTIONS)
    path = os.path.join(out, "seed_claims.rst")
    os.makedirs(out, exist_ok=True)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


if __name__ == "__main__":
    print(seed_claims())
