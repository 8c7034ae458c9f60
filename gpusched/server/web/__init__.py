"""The web page served by ``gpusched serve`` at ``/``: ``routes`` (static files and the read-only
JSON endpoints, ``mount(app)`` registers them on the ``ApiServer``) and ``summary`` (GPU cells,
allocation, fragmentation, history)."""

from gpusched.server.web.routes import mount

__all__ = ["mount"]
