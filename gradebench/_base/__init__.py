"""The ground floor: the vocabulary, errors, number formatting, key redaction, TOML reading, the fan-out, the
wire protocol, the one sync door and the one canonical JSON. It imports nothing else of gradebench.
"""
