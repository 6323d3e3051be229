"""Under uvicorn: pre-authentication limits, trusted proxies, middleware, safe logs."""
