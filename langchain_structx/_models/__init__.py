"""What we know of providers and models: capabilities, identity, how they reject a request."""
