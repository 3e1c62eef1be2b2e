"""``make bench`` (``python -m memctx.bench``): speed of the per-turn foundations, the raw store
at 20,000 segments and the context hook at 2,000 messages against naive baselines run in
the same process, and LoCoMo evidence recall through the product's recall path.

May import: everything below it. Nothing imports it.
"""
