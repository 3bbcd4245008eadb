"""The MCP adapter of the environment core.

:mod:`mcp_client.server` serves the 29 merchant tools of ``environment.tools.REGISTRY``
over MCP (``build_server``, ``serve_stdio``); :mod:`mcp_client.client` is a small client
that reads tool results as ``(is_error, text)``.  Nothing here declares a tool.
"""
