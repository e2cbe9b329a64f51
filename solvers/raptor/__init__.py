"""RAPTOR: the random-projection physics-informed transient solver (see ``docs/raptor.md``)."""
