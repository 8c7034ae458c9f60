"""The web page served by ``gpusched serve`` at ``/``: ``routes`` (static files and the read-only
JSON endpoints) and ``summary`` (GPU cells, allocation, fragmentation, history)."""
