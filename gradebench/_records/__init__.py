"""The records of a race and their row form: calls, verdicts and runs, the codec and spool that keep them, the
race spec, the report's meta, the inputs, the planted controls and the ids and cache keys.
"""
