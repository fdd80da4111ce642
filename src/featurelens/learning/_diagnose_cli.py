"""PLACEHOLDER for the ``featurelens diagnose`` command: being written; replace this module.

The contract with featurelens.cli: HELP, DESCRIPTION, add_arguments(parser), run(args) -> int.
"""

HELP = "train a small network on modular addition with the training monitor and write a report"
DESCRIPTION = HELP


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    print("featurelens diagnose: not implemented yet")
    return 1
