"""The blind judge: its prompt, asking for a score and reading it, the judge setup, the tool-call diff, a panel of
judges and how far its judges agree.
"""
