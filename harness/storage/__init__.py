"""Storage helpers under every layer that writes or reads results: the one atomic writer (:mod:`.files`) and
the manifest of a published folder (:mod:`.manifest`). They know nothing of jobs."""
