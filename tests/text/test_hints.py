"""Every hint in a text error is an argument the API accepts.

Each case triggers one error of featurelens.text / fl.plots.text whose message suggests keywords
("pass bos_token_id=<int>", "use removal='mask'"); the test parses every ``name=value`` after the
message's first "pass" / "use", turns it into a value (the quoted one, or the case's own for
``<int>``, ``<float>`` and a bare ``name=``), and makes the same call with it: it must succeed. A
source scan checks that every keyword a text error suggests is covered by some case.
"""

import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import featurelens as fl  # noqa: E402
from featurelens.text import ClassifierGame, GenerationGame, Players, embedding_attributions, explain  # noqa: E402

from ._planted import SPECIALS, WORDS, PlantedClassifier, word_tokenizer  # noqa: E402

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

SRC = pathlib.Path(fl.__file__).resolve().parent
FILES = sorted((SRC / "text").glob("*.py")) + [SRC / "plots" / "text.py", SRC / "interactions" / "_interactions.py"]
V = len(SPECIALS) + len(WORDS)
TEXT = "not bad"
# After the message's first "pass" / "use": name=<int> | name=<float> | name='str' | name=True/False | name=
_START = re.compile(r"\b(?:[Pp]ass|[Uu]se)\b")
_HINT = re.compile(r"\b([a-z_]+)=(<int>|<float>|'[^']*'|True|False|None|-?\d+(?:\.\d+)?|)(?![\w<'(\[])")


def hints(message: str) -> list[tuple[str, str]]:
    m = _START.search(message)
    return [] if m is None else _HINT.findall(message[m.end():])


def bare_tokenizer(mask: bool = False):
    """A fast tokenizer with no bos / eos / pad / unk (and, unless ``mask``, no mask) token."""
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(WORDS + ["[MASK]"])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="the"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=core, **({"mask_token": "[MASK]"} if mask else {}))


class Mean(torch.nn.Module):
    """Mean of the embeddings of the tokens other than [PAD] (NaN when there are none), a head."""

    def __init__(self, n_vocab=V, pad=None, causal=False):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.pad, self.causal = torch.nn.Embedding(n_vocab, 4), pad, causal
        self.head = torch.nn.Linear(4, n_vocab if causal else 2)

    def forward(self, ids):
        e = self.embed(ids)
        if self.causal:
            return self.head(e.cumsum(1))
        keep = torch.ones_like(ids, dtype=torch.bool) if self.pad is None else ids != self.pad
        return self.head((e * keep[..., None]).sum(1) / keep.sum(1, keepdim=True))


class TwoEmbeddings(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.other = torch.nn.Embedding(V, 3), torch.nn.Embedding(V, 3)

    def forward(self, ids):
        return (self.embed(ids) + 0 * self.other(ids)).sum(1)[:, :2]


def on_texts(texts):
    return np.array([[float(len(t)), 0.0] for t in texts])


def nan_on_empty(texts):
    return np.array([[float(len(t)) if t else np.nan, 0.0] for t in texts])


def word_ids(s):
    return [int(w[1:]) for w in s.split()]


TOK = word_tokenizer()
NO_SPECIALS = word_tokenizer(specials=False)
BARE, BARE_MASK = bare_tokenizer(), bare_tokenizer(mask=True)
LM, CLF = Mean(causal=True), PlantedClassifier()

# name: (trigger, fix(**keywords), values for <int> / <float> / bare name=)
CASES = {
    "gradient method needs token ids": (
        lambda: fl.explainer("saliency", CLF, tokenizer="whitespace"),
        lambda **kw: fl.explainer("saliency", CLF, **kw).explain(TEXT), {"tokenizer": TOK}),
    "a torch module reads token ids": (
        lambda: fl.explainer("exact", CLF, tokenizer="whitespace").explain(TEXT),
        lambda **kw: fl.explainer("exact", on_texts if "inputs" in kw else CLF,
                                  **{"tokenizer": "whitespace", **kw}).explain(TEXT),
        {"tokenizer": TOK}),
    "inputs='ids' without token ids": (
        lambda: ClassifierGame(on_texts, Players(TEXT), inputs="ids"),
        lambda **kw: ClassifierGame(on_texts, Players(TEXT), **kw).grand(), {}),
    "removal='pad' on texts": (
        lambda: ClassifierGame(on_texts, Players(TEXT), removal="pad"),
        lambda **kw: ClassifierGame(on_texts, Players(TEXT), **kw).grand(), {}),
    "empty coalition without a token": (
        lambda: fl.explainer("exact", Mean(len(WORDS) + 1), tokenizer=BARE).explain(TEXT),
        lambda **kw: fl.explainer("exact", Mean(len(WORDS) + 1), tokenizer=BARE, **kw).explain(TEXT),
        {"empty_token_id": 0, "removal": 0}),
    "empty coalition without a token (a mask token)": (
        lambda: fl.explainer("exact", Mean(len(WORDS) + 1), tokenizer=BARE_MASK).explain(TEXT),
        lambda **kw: fl.explainer("exact", Mean(len(WORDS) + 1), tokenizer=BARE_MASK, **kw).explain(TEXT),
        {"empty_token_id": 0, "removal": 0}),
    "NaN on the empty text": (
        lambda: fl.explainer("exact", nan_on_empty, tokenizer="whitespace", inputs="text").explain(TEXT),
        lambda **kw: fl.explainer("exact", nan_on_empty, tokenizer="whitespace", inputs="text", **kw).explain(TEXT),
        {}),
    "NaN on the pad token sent as the empty text": (
        lambda: fl.explainer("exact", Mean(pad=0), tokenizer=NO_SPECIALS).explain(TEXT),
        lambda **kw: fl.explainer("exact", Mean(pad=0), tokenizer=NO_SPECIALS, **kw).explain(TEXT),
        {"empty_token_id": 1, "removal": 1}),
    "GenerationGame removal='mask' without a mask id": (
        lambda: GenerationGame(LM, word_ids, Players("w6 w7"), [8], removal="mask"),
        lambda **kw: GenerationGame(LM, word_ids, Players("w6 w7"), [8], **kw).grand(), {"removal": 0}),
    "GenerationGame empty prompt": (
        lambda: GenerationGame(LM, word_ids, Players("w6 w7"), [8]).empty(),
        lambda **kw: GenerationGame(LM, word_ids, Players("w6 w7"), [8], **kw).empty(),
        {"bos_token_id": 2, "empty_token_id": 2, "removal": 0}),
    "causal LM SPEX on a tokenizer without bos (the issue's call)": (
        lambda: fl.explainer("spex", Mean(len(WORDS) + 1, causal=True), tokenizer=BARE_MASK, continuation=" bad",
                             budget=200, max_order=1).explain("the movie was not"),
        lambda **kw: fl.explainer("spex", Mean(len(WORDS) + 1, causal=True), tokenizer=BARE_MASK,
                                  continuation=" bad", budget=200, max_order=1, **kw).explain("the movie was not"),
        {"bos_token_id": 2, "empty_token_id": 2, "removal": 0}),
    "embedding layer ambiguous": (
        lambda: fl.explainer("saliency", TwoEmbeddings(), tokenizer=TOK).explain(TEXT),
        lambda **kw: fl.explainer("saliency", TwoEmbeddings(), tokenizer=TOK, **kw).explain(TEXT),
        {"embedding_layer": "embed"}),
    "baseline='pad' without a pad token": (
        lambda: fl.explainer("integrated_gradients", Mean(len(WORDS) + 1), tokenizer=BARE, n_steps=4).explain(TEXT),
        lambda **kw: fl.explainer("integrated_gradients", Mean(len(WORDS) + 1), tokenizer=BARE, n_steps=4,
                                  **kw).explain(TEXT),
        {"baseline": 0}),
    "embedding_attributions on players without ids": (
        lambda: embedding_attributions(CLF, Players(TEXT), "saliency"),
        lambda **kw: embedding_attributions(CLF, Players(TEXT, **kw), "saliency"), {"tokenizer": TOK}),
    "reduce without a continuation": (
        lambda: fl.explainer("saliency", CLF, tokenizer=TOK, reduce="mean").explain(TEXT),
        lambda **kw: fl.explainer("saliency", LM if "continuation" in kw else CLF, tokenizer=TOK,
                                  **{"reduce": "mean", **kw}).explain(TEXT),
        {"continuation": " bad"}),
    "a causal LM's logits without a continuation": (
        lambda: fl.explainer("saliency", LM, tokenizer=TOK).explain(TEXT),
        lambda **kw: fl.explainer("saliency", LM, tokenizer=TOK, **kw).explain(TEXT), {"continuation": " bad"}),
    "unit='token' without a tokenizer": (
        lambda: Players(TEXT, unit="token"),
        lambda **kw: Players(TEXT, **{"unit": "token", **kw}), {"tokenizer": TOK}),
    "removal='mask' without a mask token": (
        lambda: ClassifierGame(lambda b: np.ones((len(b), 2)), Players(TEXT, BARE), removal="mask"),
        lambda **kw: ClassifierGame(lambda b: np.ones((len(b), 2)), Players(TEXT, BARE), **kw).grand(),
        {"removal": 0}),
    "LIME kernel_width too small": (  # the lime_text sampler removes a word: every distance > 0
        lambda: explain(ClassifierGame(on_texts, Players("not bad at")), "lime", budget=20, sampler="lime_text",
                        kernel_width=1e-3),
        lambda **kw: explain(ClassifierGame(on_texts, Players("not bad at")), "lime", budget=20,
                             sampler="lime_text", **kw),
        {"kernel_width": 0.25}),
    "plots.text without names": (
        lambda: fl.plots.text(np.ones(2)),
        lambda **kw: fl.plots.text(np.ones(2), **kw), {"players_or_names": ["not", "bad"]}),
    "Interactions.top(names=True) without names": (
        lambda: fl.Interactions({(0, 1): 1.0}, "mobius", 2).top(names=True),
        lambda **kw: fl.Interactions({(0, 1): 1.0}, "mobius", 2).top(**kw), {"names": ["not", "bad"]}),
    "Interactions.dense too large": (
        lambda: fl.Interactions({(0, 1, 2): 1.0}, "mobius", 300).dense(3),
        lambda **kw: fl.Interactions({(0, 1, 2): 1.0}, "mobius", 300).top(5, **kw), {}),
}


def concrete(name, value, given):
    if value in ("<int>", "<float>", ""):
        return given[name]
    if value.startswith("'"):
        return value[1:-1]
    if value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[value]
    return float(value) if "." in value else int(value)


@pytest.mark.parametrize("case", list(CASES))
def test_every_hint_is_an_accepted_argument(case):
    trigger, fix, given = CASES[case]
    with pytest.raises((ValueError, TypeError)) as err:
        trigger()
    suggested = hints(str(err.value))
    assert suggested, f"{case}: no name= hint in {err.value}"
    for name, value in suggested:
        try:
            fix(**{name: concrete(name, value, given)})
        except Exception as again:  # noqa: BLE001 - the message says which hint failed
            raise AssertionError(f"{case}: the hint {name}={value or '...'} of\n  {err.value}\nfails with "
                                 f"{type(again).__name__}: {again}") from again
    plt.close("all")


def test_the_cases_cover_every_hint_in_the_sources():
    """Each keyword a text error suggests in the source (after "pass" / "use" in a string) is
    suggested by the error of some case above."""
    covered = set()
    for trigger, _, _ in CASES.values():
        try:
            trigger()
        except (ValueError, TypeError) as err:
            covered |= {name for name, _ in hints(str(err))}
    plt.close("all")
    in_source = {}
    for path in FILES:
        for line in path.read_text().splitlines():
            if '"' not in line or not _START.search(line):
                continue
            for name, _ in hints(line):
                in_source.setdefault(name, set()).add(path.name)
    assert in_source, "the source scan found no hint"
    missing = {name: files for name, files in in_source.items() if name not in covered}
    assert not missing, f"hints without a case: {missing}"


def test_the_plot_hint_to_pass_one_row():
    e = fl.Explanation(values=np.array([[1.0, -1.0], [0.5, 0.2]]), method="exact", feature_names=["not", "bad"])
    with pytest.raises(ValueError, match=r"fl.plots.text\(e\[i\]\)"):
        fl.plots.text(e)
    ax = fl.plots.text(e[1])
    assert [t.get_text() for t in ax.texts] == ["not", "bad"]
    plt.close("all")


def test_the_parser():
    assert hints("got removal='pad'; pass bos_token_id=<int> (a token), empty_token_id=<int> or removal='mask'") == [
        ("bos_token_id", "<int>"), ("empty_token_id", "<int>"), ("removal", "'mask'")]
    assert hints("needs token ids: pass a HuggingFace tokenizer as tokenizer=") == [("tokenizer", "")]
    assert hints("no hint here, x=1") == []
