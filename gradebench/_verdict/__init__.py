"""The verdict: what it may rest on (evidence), the negative controls' outcome, human labels and the
label-corrected verdict, the recommendation, and the two races to a verdict (betting and group-sequential).
"""
