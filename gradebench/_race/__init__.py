"""Racing: the job contract, a prompt job, the plan, the race, the budget, predicted costs, the estimate,
rejudging, the negative controls' runs, the preflight check and `Benchmark`.
"""
