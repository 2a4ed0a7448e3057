"""Memory Studio: the web page the gateway serves at ``/studio``.

- ``static/``: the page itself (HTML, one stylesheet, plain ES modules), shipped in the
  package: nothing is fetched from the internet and nothing is built at install time. It calls
  only the gateway's REST API, with the API key the person signs in with (kept in the tab's
  ``sessionStorage``), so it sees exactly what that key may see.
- ``web.py``: the ``/studio`` mount, with a strict Content-Security-Policy.
- ``endpoints.py``: the two routes the page needs beyond the memory API: ``GET /v1/whoami``
  (the key's role and owner) and ``GET /v1/activity`` (the services' counters, operator keys).
"""
