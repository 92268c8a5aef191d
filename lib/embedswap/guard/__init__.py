"""The drift guard: after the swap, check in seconds that a running server still answers as the accepted attempt
measured (``guard init`` / ``guard check``), and that an index's stored vectors came from it (``guard index``).

``guard_file`` (the file's typed content, its sha256 and the embedded arrays), ``canaries`` (which inputs are kept),
``build`` (a guard from an attempt's captures), ``check`` (the comparison per aspect), ``output`` (the one line,
JSON and JUnit XML), ``cronjob`` (the Kubernetes CronJob), ``index`` (an index's provenance), ``cli``.
"""
