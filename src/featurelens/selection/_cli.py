"""PLACEHOLDER for the ``featurelens select`` command: being written; replace this module.

The contract with featurelens.cli: HELP, DESCRIPTION, add_arguments(parser), run(args) -> int.
"""

HELP = "select the columns of a CSV file that predict a target column"
DESCRIPTION = HELP


def add_arguments(parser) -> None:
    pass


def run(args) -> int:
    print("featurelens select: not implemented yet")
    return 1
