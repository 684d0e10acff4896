"""The oracle upstream: a scripted model that drives the real CLI offline."""
