"""Postgres access: the pool, migrations, and one query module per concern."""
