"""What operators run: container images, manifests, and the local development cluster."""
