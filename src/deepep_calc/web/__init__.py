"""The local web face of the calculator: FastAPI app, JSON API, pages (see `app.create_app`)."""
