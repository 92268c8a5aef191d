"""summary.json: every figure and decision of the report, computed from an attempt's capture files only.

:mod:`.build` assembles the summary from one builder per section (:mod:`.sections`), :mod:`.model` is its typed
shape, :mod:`.upgrade` reads a file of any schema version and returns the typed :class:`~.model.Summary`. The
package itself imports nothing: :mod:`embedswap.analysis` reads the typed model, and :mod:`.build` calls the
analysis, so a package that loaded :mod:`.build` on import would make every reader of the model load it too.
"""
