"""`gpubottle run --try-fixes`: fixes timed on the user's own machine."""
