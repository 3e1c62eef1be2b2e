"""LoCoMo in ``make bench``: the retrieval ablation table and the leave-one-conversation-out
check, over the adapter and measures of :mod:`memctx.harness.locomo`.
"""
