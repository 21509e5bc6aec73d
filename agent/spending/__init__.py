"""Spending caps: what a call may cost at worst, what it did cost, and the budget periods it counts in.

Pure policy: the gateway's ledger (`gateway.store.spend`) reserves a call's worst case against every
cap it counts toward before the call is sent, and settles it to the billed cost when the answer ends.
"""
