"""Unit tests of the authorization matrix and the generated security documents."""
