"""Drift between two races of one job: pairing their runs, the change per entry, the terms that differ, and the
words.
"""
