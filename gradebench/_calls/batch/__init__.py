"""The judge through a Batch API: the layer that gathers verdict requests, the providers' APIs and the journal of
batches submitted and not yet collected.
"""
