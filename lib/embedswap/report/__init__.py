"""The report of an experiment: one skeleton template, a catalogue of words per language, one module per section.

Layout: ``format.py`` (numbers, labels, markdown cells), ``catalogue.py`` + ``catalogue/<lang>.toml`` (words),
``sections/<name>.py`` (summary section -> template values), ``markdown.py`` (the skeleton rendered: the full
report), ``post.py`` (the post: the blog draft that leads with its conclusion and links the full report),
``html.py`` (the page), ``publish.py`` (files, figures, report.json, the index: ``render_report``), ``figures.py``
(charts).

Nothing is imported here: ``embedswap.report.errors`` (which the command line reads for every command) would
otherwise load matplotlib, seaborn and scipy, 3.5 of the 4 s that ``embedswap new`` took (``python -X importtime``).
Import the module you need (``from embedswap.report.publish import render_report``).
"""
