"""Plots of tabular attributions and pairwise interactions, with feature names (``fl.plots``).

``bar``, ``beeswarm``, ``waterfall``, ``force``, ``dependence`` and ``heatmap`` draw attribution
values ``(n, d)`` (or one row ``(d,)``); ``interaction_heatmap`` and ``interaction_network`` draw a
``(d, d)`` pairwise interaction matrix. Each returns the matplotlib Axes it drew into (pass
``ax=`` to draw into your own) and never calls ``plt.show``. See ``featurelens.plots.tabular``.

``featurelens.plots.maps`` draws attribution maps (images, signals, volumes): what
``Explanation.plot`` and the reports use.
"""

from .feature_dependence import dependence, interaction_heatmap, interaction_network, interaction_scores
from .local import force, waterfall
from .tabular import bar, beeswarm, heatmap
from .text import text, text_interactions

__all__ = [
    "bar",
    "beeswarm",
    "dependence",
    "force",
    "heatmap",
    "interaction_heatmap",
    "interaction_network",
    "interaction_scores",
    "text",
    "text_interactions",
    "waterfall",
]
