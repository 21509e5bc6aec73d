"""The spending ledger: what each scope spent per day and month, and what calls in flight hold."""
