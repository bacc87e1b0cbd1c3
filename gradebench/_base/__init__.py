"""The ground floor: the vocabulary, errors, number formatting, key redaction, TOML reading, the fan-out, the
wire protocol and the one sync door. It imports nothing else of gradebench.
"""
