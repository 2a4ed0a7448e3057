"""Static files the gateway serves (the API docs page); shipped in the package, nothing from a CDN."""
