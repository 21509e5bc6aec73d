"""From a platform update to a stored message: authorization, admission, rendering, reply context,
the spool, recovery."""
