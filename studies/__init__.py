"""Studies: who takes part, in which sessions, and what they produced."""
