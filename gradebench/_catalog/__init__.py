"""The catalog: which models a deployment can call, at what price and in which grade; the file's schema, the price
database, model families and the OpenRouter model list.
"""
