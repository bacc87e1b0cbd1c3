"""The path of one model call: the on-disk cache, admission control, usage and cost, the session a race holds
open, the seat a job sits at, tools, and the judge's Batch APIs (`batch/`).
"""
