"""The console has no models of its own: a shift and its calls, pauses and briefing
acknowledgements are :mod:`shifts.models` (moved there with ``SeparateDatabaseAndState``;
the tables kept their ``console_`` names)."""
