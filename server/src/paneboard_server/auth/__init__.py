"""Who is who: tokens, accounts, sessions, password throttling, revocation."""
