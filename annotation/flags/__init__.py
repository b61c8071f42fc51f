"""A rater's "flag this conversation", and the coordinator's queue of flags to resolve."""
