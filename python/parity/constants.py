"""Polygraphy's constants.MARK_ALL: mark every tensor as an output."""
MARK_ALL = "mark-all"
DEFAULT_SEED = 1
