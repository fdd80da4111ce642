"""The README's Layout section and the package tree agree.

The Layout section's code block lists ``src/featurelens/`` one entry per line indented by two
spaces: the names the entry starts with, one space apart (``models/``, ``games.py``,
``_linalg.py _wavelets.py``), then, after two or more spaces, its description, continued on
deeper-indented lines. Checked here:

- every package (a folder with ``__init__.py``) directly under ``src/featurelens`` is an entry,
  and every package entry exists;
- every module directly under ``src/featurelens`` (but ``__init__.py``) is named in the block, and
  every module an entry starts with exists;
- every package inside a package (``explainers/tree/``, ``metrics/faithfulness/``) is named in its
  parent's entry, and every ``name/`` or ``name.py`` an entry's description names exists in that
  package;
- the section points to ``docs/architecture.md``, which exists.

The same checks hold for the long form of the list, the Layout section of ``docs/layout.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "featurelens"
README = ROOT / "README.md"

_NAME = re.compile(r"[A-Za-z_]\w*(?:\.py|/)")


def layout_section(text: str) -> str:
    """The README's ``## Layout`` section (up to the next ``## `` heading)."""
    match = re.search(r"^## Layout\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise AssertionError("README.md has no '## Layout' section")
    return match.group(1)


def layout_entries(section: str) -> dict:
    """``{name: description}`` of the Layout block's ``src/featurelens/`` entries: each name an
    entry starts with (``models/``, ``games.py``) maps to the entry's whole text."""
    block = re.search(r"^```[^\n]*\n(.*?)^```", section, re.M | re.S)
    if block is None:
        raise AssertionError("the Layout section has no code block")
    lines = block.group(1).splitlines()
    if not lines or lines[0].strip() != "src/featurelens/":
        raise AssertionError(f"the Layout block must start with 'src/featurelens/'; got {lines[:1]}")
    entries, current = {}, None
    for line in lines[1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:  # tests/, benchmarks/, docs/: outside the package
            current = None
            continue
        if indent == 2:
            # the names come first, one space apart; two or more spaces start the description
            words = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0].split(" ")
            names = []
            for word in words:
                if not _NAME.fullmatch(word):
                    break
                names.append(word)
            if not names:
                raise AssertionError(f"a Layout entry must start with a module or package name: {line!r}")
            current = {"names": names, "text": line[2:]}
            for name in names:
                if name in entries:
                    raise AssertionError(f"{name} has two Layout entries")
                entries[name] = current
        elif current is not None:
            current["text"] += "\n" + line.strip()
    return {name: entry["text"] for name, entry in entries.items()}


def packages_in(folder: Path) -> set:
    return {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


def modules_in(folder: Path) -> set:
    return {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}


def check_layout(readme_text: str, package: Path = PACKAGE) -> None:
    """Every check of this module on a README text (AssertionError naming what disagrees)."""
    section = layout_section(readme_text)
    entries = layout_entries(section)
    named_packages = {n[:-1] for n in entries if n.endswith("/")}
    named_modules = {n for n in entries if n.endswith(".py")}

    packages = packages_in(package)
    assert named_packages == packages, (
        f"packages without a Layout entry: {sorted(packages - named_packages)}; "
        f"Layout entries that are not packages: {sorted(named_packages - packages)}")

    block_text = "\n".join(entries.values())
    mentioned = set(re.findall(r"[A-Za-z_]\w*\.py\b", block_text)) | named_modules
    modules = modules_in(package)
    missing = sorted(modules - mentioned)
    assert not missing, f"modules of src/featurelens the Layout does not name: {missing}"
    absent = sorted(named_modules - modules)
    assert not absent, f"Layout entries that are not modules of src/featurelens: {absent}"

    for name in sorted(named_packages):
        folder = package / name
        text = entries[name + "/"]
        nested = packages_in(folder)
        # "tree/ (...)", "faithfulness/, robustness/": a name and a slash, then a space, a comma,
        # a parenthesis or the end (not "Moebius/Fourier" or "--executor/--workers")
        words = set(re.findall(r"(?<![\w/])([A-Za-z_]\w*)/(?=[\s,;)]|$)", text))
        unnamed = sorted(nested - words)
        assert not unnamed, f"packages inside {name}/ that its Layout entry does not name: {unnamed}"
        inside = {p.name for p in folder.rglob("*") if p.suffix == ".py" or p.is_dir()}
        for word in sorted(words - {name}):
            assert word in inside, f"{name}/'s Layout entry names {word}/, which is not in {name}/"
        for module in sorted(set(re.findall(r"[A-Za-z_]\w*\.py\b", text))):
            assert module in inside, f"{name}/'s Layout entry names {module}, which is not in {name}/"

    assert "docs/architecture.md" in section, "the Layout section must point to docs/architecture.md"
    assert (package.parents[1] / "docs" / "architecture.md").is_file(), "docs/architecture.md is missing"


def test_the_readme_layout_matches_the_package_tree():
    check_layout(README.read_text(encoding="utf-8"))


def test_the_documentation_layout_matches_the_package_tree():
    # docs/layout.md: the long form of the README's list (one entry per module, with what it holds)
    check_layout((ROOT / "docs" / "layout.md").read_text(encoding="utf-8"))


def _tree(tmp_path, packages=("models", "explainers"), nested=("explainers/tree",), modules=("games.py",)):
    pkg = tmp_path / "src" / "featurelens"
    for p in packages + nested:
        (pkg / p).mkdir(parents=True)
        (pkg / p / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "explainers" / "_base.py").write_text("")
    for m in modules:
        (pkg / m).write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "architecture.md").write_text("")
    return pkg


_GOOD = """# x

## Layout

```
src/featurelens/
  models/          the adapter
  explainers/      _base.py, and tree/ (TreeSHAP)
  games.py         games
tests/             tests
```

See docs/architecture.md.

## Changelog
"""


def test_the_check_accepts_a_true_layout(tmp_path):
    check_layout(_GOOD, _tree(tmp_path))


@pytest.mark.parametrize("change,message", [
    (lambda t: t.replace("  models/          the adapter\n", ""), "packages without a Layout entry: ['models']"),
    (lambda t: t.replace("  games.py         games\n", "  games.py         games\n  bench/           gone\n"),
     "Layout entries that are not packages: ['bench']"),
    (lambda t: t.replace("  games.py         games\n", ""), "modules of src/featurelens the Layout does not name"),
    (lambda t: t.replace("and tree/ (TreeSHAP)", "(TreeSHAP)"), "does not name: ['tree']"),
    (lambda t: t.replace("_base.py", "_bass.py"), "names _bass.py, which is not in explainers/"),
    (lambda t: t.replace("See docs/architecture.md.", ""), "must point to docs/architecture.md"),
])
def test_the_check_refuses_a_stale_layout(tmp_path, change, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_layout(change(_GOOD), _tree(tmp_path))
