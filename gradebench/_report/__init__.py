"""The report: the runs and the per-entry models view, diagnostics, one presenter for text and HTML, the page to
share and the charts (all three reading a report through `view.ReportView`).
"""
