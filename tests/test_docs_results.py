"""docs/results.md, the site's results overview, holds no hand-copied number, and it links every
benchmark's generated page.

The numbers live in ``benchmarks/results/<name>.json``; the site shows them through pages and
snippets that ``docs/_generate.py`` writes from those files (``generated/benchmarks/<name>``,
``generated/headlines/*.txt``), so a rerun cannot leave a stale copy behind. Fast: no Sphinx build
(that is ``tests/test_docs_build.py``); the snippet writers run on the stored results.
"""

import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
PAGE = os.path.join(DOCS, "results.md")

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
