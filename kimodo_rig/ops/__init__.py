"""Pure operations on the model: each returns new objects and never changes its inputs."""
