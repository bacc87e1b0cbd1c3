"""The statistics, one of each: paired bootstrap intervals and non-inferiority, ratios, group-sequential
boundaries, prediction-powered inference, the Pareto front, Student's t, weighted κ
and the interval of an agreement coefficient (`hull`).
"""
