"""The release recipe: the JSON document a GUI session, a CLI run and a report share.

:mod:`.model` (frozen dataclasses, JSON with schema_version, migration), :mod:`.build` (a recipe
from a table's public schema), :mod:`.validate` (every problem with the document).  Compiling and
running it are the plan's and the pipeline's (:mod:`dpstudio.plan`, :mod:`dpstudio.pipeline`).
"""
