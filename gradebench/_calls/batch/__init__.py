"""The judge through a Batch API: the layer that gathers verdict requests, the providers' APIs, the journal of
batches submitted and not yet collected, and the collection of a finished batch's answers.
"""
