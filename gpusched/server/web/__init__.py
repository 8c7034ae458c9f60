"""The web page served by ``gpusched serve`` at ``/``: each node's GPUs, who holds them, and how
full and fragmented the cluster is. Modules: ``routes`` (static files and the read-only JSON
endpoints, ``mount(app)`` registers them on the ``ApiServer``), ``summary`` (GPU cells,
allocation, fragmentation, history), ``index`` (each node's devices and their holders, cached
across reads), ``query`` (the JSON answers shaped from that index) and ``recorder`` (history points
recorded on every change)."""

from gpusched.server.web.routes import mount

__all__ = ["mount"]
