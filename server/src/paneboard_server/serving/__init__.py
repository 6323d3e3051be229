"""Running under uvicorn: the socket, pre-authentication limits, middleware, safe logs."""
