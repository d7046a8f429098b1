"""Pure-Python references of every ``prism._native`` export.

They live in tests only: the product has one implementation (the native
one); these exist so property tests can check native == oracle.
"""
