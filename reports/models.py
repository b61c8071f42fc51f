"""Reports keep no tables of their own yet; figures are computed from ratings and labels."""
