"""The MCP adapter of the environment core.

:mod:`mcp_client.server` serves the 29 merchant tools of ``environment.tools.REGISTRY``
over MCP (``build_server``, ``serve_stdio``); :mod:`mcp_client.http` serves many episodes over
streamable HTTP, each behind its own bearer token; :mod:`mcp_client.client` is a small
client (in memory, stdio or URL with a token) that reads tool results as
``(is_error, text)``.  Nothing here declares a tool.
"""
