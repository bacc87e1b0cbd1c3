"""The verdict: one pipeline from the runs' paired scores to each entry's verdict against the reference (`pipeline`),
what a verdict may rest on (evidence), the negative controls' outcome, human labels and the label-corrected verdict,
the recommendation, and the two races to a verdict (betting and group-sequential).
"""
