"""The scheduled jobs' tables and queries: idle sessions, retention, the daily roll-up, each job's runs."""
