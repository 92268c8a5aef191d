"""The one pipeline: captures -> sections -> decisions -> the validated ``Summary``, written once. It sits above
everything it calls (the summary's sections, the decisions, the diagnosis), so nothing below imports it."""
