"""LoCoMo (long conversations with evidence-labelled questions): the adapter, evidence recall
at k and at a token budget, the ablation table and the leave-one-conversation-out check.
"""
