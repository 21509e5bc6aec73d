"""Who may do what, when: one turn per chat (chat locks), one run of a job (job locks), one worker per
fleet role (leases)."""
