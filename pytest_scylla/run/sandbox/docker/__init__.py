"""The `docker` sandbox, through the docker SDK."""
