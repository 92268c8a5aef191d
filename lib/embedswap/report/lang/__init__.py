"""The report's words, one module per language (ko, en, ja, zh): LABELS, PARTLY, UNIT_GAP, VERSION, TERMS."""
