"""A model report: which embedding method, which layers, at what cost, on one model (issue 27).

`plan` fits the work into a time budget and estimates it before anything runs, `sections` measures (quality with
paired differences, cost, layers, mechanism), `recommend` answers with reasons, `build` runs it all through
callables an application can serve from its cache, `html` renders one standalone HTML file and the JSON.
"""
