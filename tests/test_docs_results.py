"""docs/results.md, the site's results overview, and benchmarks/README.md, the benchmarks' run
instructions, hold no hand-copied number; results.md links every benchmark's generated page, and the
README names every benchmark script and points to every results file and its generated page.

The numbers live in ``benchmarks/results/<name>.json``; the site shows them through pages and
snippets that ``docs/_generate.py`` writes from those files (``generated/benchmarks/<name>``,
``generated/headlines/*.txt``), so a rerun cannot leave a stale copy behind. Fast: no Sphinx build
(that is ``tests/test_docs_build.py``); the snippet writers run on the stored results.
"""

import glob
import importlib.util
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
PAGE = os.path.join(DOCS, "results.md")
BENCH_README = os.path.join(ROOT, "benchmarks", "README.md")
#: The last version of benchmarks/README.md that still carried hand-copied result tables and
#: findings; the README checks below must reject it.
OLD_BENCH_README = "67205a334eaa5de7ea3b2ce51f14d411174c8fe9"

NAMES = sorted(f[:-5] for f in os.listdir(RESULTS) if f.endswith(".json"))

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
#: What a measured value looks like in prose: a decimal, a ratio ("4.5x", "12x"), a percentage.
MEASURED = [re.compile(r"(?<![\w.])\d+\.\d+"), re.compile(r"(?<![\w.])\d+(\.\d+)?\s?x\b"),
            re.compile(r"\d\s?%")]


def _page() -> str:
    with open(PAGE, encoding="utf-8") as f:
        return f.read()


def _prose(text: str) -> str:
    """The page without its fenced blocks (the includes of generated snippets) and code spans
    (commands, options and names, such as ``--p 61``)."""
    return CODE.sub("", FENCE.sub("", text))


def table_rows_with_digits(text: str) -> list[str]:
    return [line for line in _prose(text).splitlines() if line.lstrip().startswith("|") and re.search(r"\d", line)]


def measured_values(text: str) -> list[str]:
    return [m.group(0) for rx in MEASURED for m in rx.finditer(_prose(text))]


def test_the_checks_catch_a_copied_number():
    copied = ("| model | ratio |\n|---|---:|\n| CNN | 0.72 |\n\nfeaturelens is 3.2x faster, 37-197x at "
              "n = 64, 12% of the time.\n")
    assert table_rows_with_digits(copied) == ["| CNN | 0.72 |"]
    assert {"0.72", "3.2", "3.2x", "197x", "2%"} <= set(measured_values(copied))
    clean = ("Run `bench_grokking.py --p 61 --train-fraction 0.3` on 8x8 and 3x32x32 images.\n"
             "```{include} generated/headlines/gradients.txt\n```\n| method | page |\n|---|---|\n")
    assert table_rows_with_digits(clean) == [] and measured_values(clean) == []


def test_results_page_holds_no_hand_copied_number():
    text = _page()
    assert table_rows_with_digits(text) == [], "a number table in docs/results.md: generate it from the JSON"
    assert measured_values(text) == [], "a measured value in docs/results.md: link or generate it"


@pytest.mark.parametrize("name", NAMES)
def test_every_results_file_is_linked(name):
    assert f"generated/benchmarks/{name}>" in _page() or f"{{doc}}`generated/benchmarks/{name}`" in _page(), (
        f"docs/results.md does not link generated/benchmarks/{name}")


def test_includes_name_snippets_that_are_generated():
    """Every ``{include}`` of the page names a snippet the generator writes (else the build fails
    later, with a less helpful message)."""
    spec = importlib.util.spec_from_file_location("docs_generate", os.path.join(DOCS, "_generate.py"))
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    made = {f"{n}.txt" for n in generate.HEADLINE_WRITERS} | {f"{n}.verdicts.txt" for n in NAMES} | {"claims.txt"}
    included = re.findall(r"^```\{include\} generated/headlines/(\S+)$", _page(), re.M)
    assert included and set(included) <= made, set(included) - made
    for name, write in generate.HEADLINE_WRITERS.items():
        with open(os.path.join(RESULTS, f"{name}.json"), encoding="utf-8") as f:
            text = write(__import__("json").load(f))
        assert re.search(r"\d", text), name   # the numbers are there, from the file


# ------------------------------------------------------------------------------ benchmarks/README.md
#
# The README says how to run each script and what it measures; the numbers stay in
# benchmarks/results/<name>.{json,md} and the pages generated from them. Its rule: no table row with a
# digit and no measured value (decimal, ratio, percentage) in its prose, as for docs/results.md; no
# code span that is a bare number (a copied value dressed as code); and its fenced blocks are run
# instructions only: each line a command (``make``, ``python``, ``.venv/bin/python``, ``pip``) or a
# comment, the comments free of measured values (durations such as "about 4 minutes" are allowed).

COMMAND = re.compile(r"^(make|python|\.venv/bin/python|pip)\b")
BARE_NUMBER = re.compile(r"^\s*[-+]?\d[\d.,]*(e[-+]?\d+)?\s*(x|%|s|ms|MiB|GB)?\s*$")


def _readme() -> str:
    with open(BENCH_README, encoding="utf-8") as f:
        return f.read()


def fenced_lines_not_run_instructions(text: str) -> list[str]:
    """The lines of fenced blocks that are neither a command nor a comment, and the comments that
    hold a measured value."""
    bad = []
    for block in FENCE.findall(text):
        for line in block.splitlines()[1:-1]:
            stripped = line.strip()
            if not stripped:
                continue
            command, _, comment = stripped.partition("#") if not stripped.startswith("#") else ("", "", stripped)
            if command and not COMMAND.match(command):
                bad.append(line)
            elif any(rx.search(comment) for rx in MEASURED):
                bad.append(line)
    return bad


def bare_number_code_spans(text: str) -> list[str]:
    return [m.group(0) for m in CODE.finditer(FENCE.sub("", text)) if BARE_NUMBER.match(m.group(0)[1:-1])]


def readme_copied_numbers(text: str) -> list[str]:
    return (table_rows_with_digits(text) + measured_values(text) + fenced_lines_not_run_instructions(text)
            + bare_number_code_spans(text))


def test_the_readme_checks_catch_a_copied_number():
    copied = ("```bash\n.venv/bin/python benchmarks/bench_agop.py   # 11.8x faster than the loop\n"
              "| predicted class | 0.295 |\n```\n"
              "| CNN8by8 1x8x8 | saliency | yes |\n\nThe speed-up is `11.8x`; within 7% of the floor.\n")
    found = readme_copied_numbers(copied)
    assert "| CNN8by8 1x8x8 | saliency | yes |" in found
    assert "| predicted class | 0.295 |" in found
    assert any("11.8x faster" in line for line in found)
    assert "`11.8x`" in found and "7%" in found
    clean = ("```bash\nmake bench   # hours\n.venv/bin/python benchmarks/bench_rfm_modular.py --fractions 0.3 0.4"
             "   # about 3-5 minutes (--quick: under 1)\n```\n"
             "Batch 256 on 1x8x8 and 3x32x32 inputs, `--repeats N` (default 9), `numpy>=2.4`.\n")
    assert readme_copied_numbers(clean) == []


def test_the_readme_checks_reject_the_old_readme():
    """The README before it was rewritten (result tables, findings with ratios) fails the checks."""
    try:
        old = subprocess.run(["git", "show", f"{OLD_BENCH_README}:benchmarks/README.md"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history here")
    assert len(table_rows_with_digits(old)) > 20
    assert len(measured_values(old)) > 20


def test_benchmarks_readme_holds_no_hand_copied_number():
    found = readme_copied_numbers(_readme())
    assert found == [], f"numbers copied into benchmarks/README.md (point to results/<name>.md instead): {found[:10]}"


@pytest.mark.parametrize("script", sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "benchmarks", "bench_*.py"))))
def test_benchmarks_readme_names_every_script(script):
    assert script in _readme(), f"benchmarks/README.md does not mention {script}"


@pytest.mark.parametrize("name", NAMES)
def test_benchmarks_readme_points_to_every_results_file(name):
    text = _readme()
    assert re.search(rf"results/{re.escape(name)}\.(md|json)\b", text), f"benchmarks/README.md: no results/{name}.md"
    assert f"generated/benchmarks/{name}`" in text, f"benchmarks/README.md: no site page generated/benchmarks/{name}"
