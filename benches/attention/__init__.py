"""The attention-compiler benchmark: ``python -m benches.attention``."""
