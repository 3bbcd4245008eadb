"""Study models; none yet."""
