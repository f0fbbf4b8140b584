"""What the public faces (middleware, node, runnable) share, below them."""
