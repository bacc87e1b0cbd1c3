"""The verdict: one pipeline from the runs' paired scores to each entry's verdict against the reference (`pipeline`),
what a verdict may rest on (evidence), the negative controls' outcome, human labels and the label-corrected verdict,
the recommendation, and the race to a verdict (group-sequential: ``runs="gsd"``, also named ``runs="auto"``).
"""
