"""How two servers' answers to the same request compare: the classification of a probe's answers, the repeats of
one request, the checks of what a request asked for. Below the measurements and the shim, which both read them."""
