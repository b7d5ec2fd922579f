"""Pure entity resolution and link building: no I/O, callers pass candidate rows in."""
