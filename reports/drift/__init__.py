"""Judge drift: two judge runs (or two judges) on the same conversations, side by side."""
