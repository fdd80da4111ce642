"""The ``"seed_claims"`` rows a case study writes into its results JSON, and their Markdown.

A row (the convention ``benchmarks/seed_claims.py`` collects)::

    {"method", "paper", "claim", "verdict", "measured", "protocol", "paper_protocol", "differences"}

``verdict`` is ``"reproduced"``, ``"partly"`` or ``"not"``, computed by the study's own verdict
function from the numbers in the JSON; the rule is stated in ``protocol``. Whether a rule was fixed
before or after the run it judges is not something a row asserts: ``RULE_TIMING`` below records it,
per results file, from the commit history (the rule's commit against the commit of the numbers).

``store(path)`` writes the ``"seed_claims"`` rows of a results file that has no list of its own (the
older studies, whose rows ``seed_claims.EXTRACTORS`` derive from their numbers) into that file, so that
every verdict is stored in its results file; ``_common.write_results`` calls it after every run.

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


# --------------------------------------------------------------------- when each rule was fixed

#: (results file, key, rule commit, results commit, timing, where the rule is, results keys).
#:
#: ``key`` selects the rows of the file it applies to (a substring of "method: claim"; "" for every
#: row; the first entry that matches wins). ``rule commit``: the commit from which the rule that
#: decides the verdict has its current form (``git log -L`` on the verdict function, or the commit
#: that first stated the rule). ``results commit``: the last commit that changed the numbers the
#: rule judges (timings, load averages and the ``seed_claims`` rows themselves left out; within
#: ``results keys`` of the JSON when given). ``timing``: ``"before"`` when the rule's commit is an
#: ancestor of the results commit, ``"after"`` when it is a descendant, ``"unknown"`` when both are
#: the same commit (rule and numbers committed together: the history cannot order them).
#: Computed once from the history (tests/benchmarks/test_seed_claims_timing.py checks it against the
#: history where the clone has it) and stored here, so that a shallow clone renders the same table.
RULE_TIMING = (
    ("agop_attribution.json", "monotonically", "c5600b7", "8906f05", "after",
     "the drop rule of benchmarks/seed_claims.py (_agop_attribution), written when the table was built", ()),
    ("agop_attribution.json", "", "12f85c0", "8906f05", "after",
     "bench_agop_attribution._verdicts / RULES, written for the protocols study after this run", ()),
    ("agop_attribution_protocols.json", "", "12f85c0", "86bde44", "before", "bench_agop_attribution._verdicts / RULES", ()),
    ("agop_attribution_protocols_64.json", "", "12f85c0", "7e73264", "before",
     "bench_agop_attribution._verdicts / RULES", ()),
    ("agop_attribution_protocols_xai_tris_training.json", "", "12f85c0", "f96b063", "before",
     "bench_agop_attribution._verdicts / RULES", ()),
    ("grokalign.json", "", "da98289", "da98289", "unknown", "bench_grokalign._verdicts", ()),
    ("grokking.json", "", "446a054", "fa30391", "before",
     "bench_grokking.py's acceptance (fired before grokking in >= 4 of 5 runs, in <= 1 of 5 controls)", ()),
    ("grokking_p61.json", "", "446a054", "d2e1bee", "before",
     "bench_grokking.py's acceptance (fired before grokking in >= 4 of 5 runs, in <= 1 of 5 controls)", ()),
    ("grokking_detector.json", "", "81681ff", "81681ff", "unknown", "bench_grokking_detector.render", ()),
    ("iif_learn.json", "", "e18857b", "e18857b", "unknown", "bench_iif_learn.verdict", ()),
    ("learning_claims.json", "", "d15ee73", "25a29b6", "before",
     "bench_learning_claims.trend_verdict / power_verdict / krr_verdict", ()),
    ("manifolds.json", "", "ebfdca2", "ebfdca2", "unknown", "bench_manifolds.claims", ()),
    ("minshap_inference.json", "", "4f5b61f", "4f5b61f", "unknown",
     "bench_minshap_inference.verdict (changed in the commit of the rerun)", ()),
    ("more_claims.json", "debiased linear CKA", "e732000", "e732000", "unknown", "bench_more_claims.cka_verdicts",
     ("cka",)),
    ("more_claims.json", "", "a32878c", "a32878c", "unknown",
     "bench_more_claims.nfa_verdicts / sand_verdicts / hyperdfs_verdicts / gsnr_verdicts / nfk_verdicts (the "
     "rerun of e732000 changed only their timings)", ("nfa", "sand", "hyperdfs", "gsnr", "nfk")),
    ("objectives.json", "Muon", "534a411", "534a411", "unknown", "bench_objectives.muon_robustness_verdict", ()),
    ("objectives.json", "", "ef5685a", "534a411", "before",
     "bench_objectives.verdicts (its SupCon and BCE rules unchanged since)", ()),
    ("ood.json", "", "c5600b7", "8906f05", "after",
     "the rules of benchmarks/seed_claims.py (_ood), written from ood.md's verdicts when the table was built", ()),
    ("rf_ensembles.json", "", "651ec09", "651ec09", "unknown", "bench_rf_ensembles.verdicts", ()),
    ("rfm_modular.json", "", "8801973", "bed8328", "after", "bench_rfm_modular.verdicts", ()),
    ("rfrboost.json", "", "651ec09", "651ec09", "unknown", "bench_rfrboost.verdict", ()),
    ("rfrboost_swim.json", "", "651ec09", "0a49aaa", "before", "bench_rfrboost.verdict", ()),
    ("rfrboost_swim_scale.json", "", "651ec09", "a18bc74", "before",
     "bench_rfrboost.verdict (52bb5be changed what it returns, not the rule)", ()),
    ("sae.json", "", "783586e", "783586e", "unknown", "bench_sae.reading (rewritten with the rerun)", ()),
    ("sae_magnitude.json", "", "18514a4", "18514a4", "unknown", "bench_sae_magnitude.reading", ()),
    ("selection_protocols.json", "SIOFS", "98c8b1b", "98c8b1b", "unknown",
     "bench_selection_protocols.siofs_verdict (changed in the commit of the run: ties do not make 'beats')", ()),
    ("selection_protocols.json", "", "78a6dd0", "98c8b1b", "before",
     "bench_selection_protocols.nbse_retention_verdict / nbse_gap_verdict / fsmwk_verdict", ()),
    ("sop.json", "", "3467760", "3467760", "unknown", "bench_sop.verdicts", ()),
    ("spex.json", "", "8801973", "bed8328", "after", "bench_spex.verdict", ()),
    ("text_models.json", "", "8801973", "bd8045c", "after", "bench_text_models.verdicts", ()),
    ("wam.json", "", "8801973", "bed8328", "after", "bench_wam.verdict", ()),
)

TIMINGS = ("before", "after", "unknown")


def rule_timing(source: str, method: str, claim: str) -> dict:
    """``rule_timing``, ``rule_commit``, ``results_commit`` and ``rule_at`` of one row (by its results
    file and text); ``unknown`` with empty commits when no entry of ``RULE_TIMING`` covers it."""
    name = Path(source).name
    text = f"{method}: {claim}"
    for file, key, rule, results, timing, where, _ in RULE_TIMING:
        if file == name and key in text:
            return {"rule_timing": timing, "rule_commit": rule, "results_commit": results, "rule_at": where}
    return {"rule_timing": "unknown", "rule_commit": "", "results_commit": "", "rule_at": ""}


def timing_text(row: dict) -> str:
    """The rule's timing in words: "fixed before the run (rule a1, run b2)", "written after the run ..."."""
    t, rule, run = row.get("rule_timing", "unknown"), row.get("rule_commit", ""), row.get("results_commit", "")
    if t == "before":
        return f"fixed before the run (rule {rule}, run {run})"
    if t == "after":
        return f"written after the run (rule {rule}, judged on the results of {run})"
    if rule:
        return f"committed with the run ({rule}): the history cannot tell which came first"
    return "not recorded"


# ------------------------------------------------------------------- one claim, several protocols

#: Claims run under several protocols (one row each in the results files): one verdict per claim.
#: (claim id, [(results file, substring of the claim)], the file whose verdict decides or None, why).
#: ``None``: no protocol is the paper's, the variants combine (reproduced when all are, not when all
#: are, partly otherwise).
CLAIM_GROUPS = (
    ("agop-weighted-44", [(f, "+44% mIoU") for f in (
        "agop_attribution.json", "agop_attribution_protocols.json", "agop_attribution_protocols_64.json",
        "agop_attribution_protocols_xai_tris_training.json")], "agop_attribution_protocols_64.json",
     "the paper's setting is XAI-TRIS 64x64 with its CNN and states neither mask nor threshold: the 64x64 "
     "protocols study (both masks x both thresholds) decides"),
    ("agop-global-7x", [(f, "7x integrated gradients") for f in (
        "agop_attribution.json", "agop_attribution_protocols.json", "agop_attribution_protocols_64.json",
        "agop_attribution_protocols_xai_tris_training.json")], "agop_attribution_protocols_64.json",
     "the paper's setting is XAI-TRIS 64x64 with its CNN and states neither mask nor threshold: the 64x64 "
     "protocols study (both masks x both thresholds) decides"),
    ("agop-ig-below-random", [(f, "below the random map") for f in (
        "agop_attribution.json", "agop_attribution_protocols.json", "agop_attribution_protocols_64.json",
        "agop_attribution_protocols_xai_tris_training.json")], "agop_attribution_protocols_64.json",
     "the paper's setting is XAI-TRIS 64x64 with its CNN and states neither mask nor threshold: the 64x64 "
     "protocols study (both masks x both thresholds) decides"),
    ("agop-together", [(f, "hold together") for f in (
        "agop_attribution_protocols.json", "agop_attribution_protocols_64.json",
        "agop_attribution_protocols_xai_tris_training.json")], "agop_attribution_protocols_64.json",
     "the paper's setting is XAI-TRIS 64x64 with its CNN: the 64x64 protocols study decides"),
    ("rfrboost", [(f, "RFRBoost beats") for f in ("rfrboost.json", "rfrboost_swim.json", "rfrboost_swim_scale.json")],
     "rfrboost_swim.json", "the paper's default features are SWIM at c = 0.5: that run decides"),
    ("minshap-accuracy", [("minshap_inference.json", "MinShap selects more accurately")], None,
     "F1 against what MinShap can see (parents and child) and against the full Markov blanket: the two scorings "
     "combine"),
    ("eigengap-default", [("grokking.json", "announces grokking"), ("grokking_p61.json", "announces grokking")], None,
     "no run is the paper's setting (M = 71, K = 2048): the two moduli combine"),
    ("sae-norm-detectors", [("sae.json", "norm detectors"), ("sae_magnitude.json", "norm detectors")], "sae.json",
     "the paper's SAEs decode with the score as published: sae.json decides; the magnitude options are featurelens'"),
    ("sae-blend-half", [("sae.json", "half-magnitude"), ("sae_magnitude.json", "half-magnitude")], "sae.json",
     "the paper's SAEs decode with the score as published: sae.json decides; the magnitude options are featurelens'"),
    ("sae-concepts", [("sae.json", "concept-aligned"), ("sae_magnitude.json", "concept-aligned")], "sae.json",
     "the paper's SAEs decode with the score as published: sae.json decides; the magnitude options are featurelens'"),
)

#: Rows that are not claims of a seed paper: (section, results file, substring of the claim, why).
#: ``identity``: an algebraic identity checked numerically; ``own``: featurelens' own claim.
NOT_SEED = (
    ("identity", "more_claims.json", "regresses as ridge regression",
     "an algebraic identity (the GP posterior mean with the kernel phi(x)^T phi(x') is ridge regression on "
     "phi), checked to rounding error; not a claim of a seed paper"),
    ("own", "sae_magnitude.json", "decoding the input's magnitude",
     "featurelens' own claim about its magnitude= option (claim M of bench_sae_magnitude.py); the paper makes "
     "no such claim"),
)

SECTIONS = {"seed": "Claims of the seed papers", "identity": "Identities (checked, not claims)",
            "own": "featurelens' own claims"}


# ----------------------------------------------------------------------------- storing the rows

#: The mark of the rows ``store`` derived (a rerun replaces them; a script's own rows are kept).
STORED_BY = "benchmarks/seed_claims.py"


def store(path, table=None) -> list[dict] | None:
    """Write the ``"seed_claims"`` rows of the results file at ``path`` into it, derived by
    ``seed_claims.EXTRACTORS`` (the study's rule on the file's numbers), when the file has an
    extractor and no list the script wrote itself (rows stored here before are replaced); returns
    the rows (None when there is nothing to store)."""
    path = Path(path)
    if table is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_fl_seed_claims_store", Path(__file__).with_name("seed_claims.py"))
        table = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(table)
    if path.name not in table.EXTRACTORS or not path.exists():
        return None
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        return None
    own = doc.get("seed_claims")
    if isinstance(own, list) and not all(isinstance(r, dict) and r.get("stored_by") == STORED_BY for r in own):
        return None   # the script wrote its own rows
    doc.pop("seed_claims", None)
    rows = table.EXTRACTORS[path.name](doc)
    doc["seed_claims"] = [dict({k: v for k, v in r.items() if k != "source"}, stored_by=STORED_BY) for r in rows]
    path.write_text(json.dumps(doc, indent=2))
    return doc["seed_claims"]
