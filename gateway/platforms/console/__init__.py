"""The local terminal chat."""
