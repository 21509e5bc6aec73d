"""The process: the `Gateway`, serving, lifecycle, wiring settings into parts, doctor, logging."""
