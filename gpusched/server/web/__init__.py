"""The web page served by ``gpusched serve`` at ``/``: ``routes`` (static files and the read-only
JSON endpoints, ``mount(app)`` registers them on the ``ApiServer``), ``summary`` (GPU cells,
allocation, fragmentation, history) and ``recorder`` (history points recorded on every change)."""

from gpusched.server.web.routes import mount

__all__ = ["mount"]
