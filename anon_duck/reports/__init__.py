"""The release report a data steward reads (``anon-duck report --html/--json``) and the parameter
sweep (``anon-duck sweep``).

The modules build one nested document from what a release already holds (its metadata, the
method's own measures, the risk of the input and of the release) and render it: as a short
terminal summary (:mod:`.text`), as JSON (the document itself, docs/report.md), or as one
self-contained HTML file with inline SVG plots (:mod:`.html`, matplotlib as an optional extra).
The method packages keep only their algorithms and measures; what a "class" is before and after
each method's release, and what each measure means, lives here.
"""
