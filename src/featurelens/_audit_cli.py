"""PLACEHOLDER for the ``featurelens audit`` command: being written; replace this module.

The contract with featurelens.cli: HELP, DESCRIPTION, add_arguments(parser), run(args) -> int.
"""

HELP = "score every applicable explainer on a model and data and write a report"
DESCRIPTION = HELP


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    print("featurelens audit: not implemented yet")
    return 1
