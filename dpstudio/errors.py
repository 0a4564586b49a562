"""Errors a user can act on, kept apart from internal failures.

The CLI maps :class:`UserError` to exit code 2 with its one-line message and no
traceback; anything else is an internal error (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable


class UserError(Exception):
    """A problem with the user's input or request, explained in one line."""


class BudgetError(UserError):
    """A release would exceed the privacy budget set for this dataset.

    ``dataset``: the ledger key of that dataset; ``matched_by``: how the input was matched to it
    ("file", "name", "rows"; set by the ledger, read by the CLI's advice on how to go on);
    ``needed_epsilon``/``left_epsilon``: what the release would spend and what the cap leaves;
    ``delta_only``: only the δ cap refused it."""

    dataset: str | None = None
    matched_by: str | None = None
    needed_epsilon: float | None = None
    left_epsilon: float | None = None
    delta_only: bool = False  # the δ cap refused it, ε would fit


class RecipeError(UserError):
    """A recipe that cannot be read or validated; ``problems`` lists every issue found."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems: list[str] = list(problems)
        head = self.problems[0] if self.problems else "invalid recipe"
        more = f" (and {len(self.problems) - 1} more problem(s))" if len(self.problems) > 1 else ""
        super().__init__(f"{head}{more}")
