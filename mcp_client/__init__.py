"""The MCP layer above the environment core, and the ``storebench`` command.

- :mod:`mcp_client.server`: the 29 merchant tools of ``environment.tools.REGISTRY`` over
  MCP (``build_server``, ``serve_stdio``), with the merchant's brief as the server's
  instructions, the prompt ``brief`` and the resource ``storebench://brief``;
- :mod:`mcp_client.sessions`: graded sessions: every episode served ends as a trial folder,
  its calls kept in an append-only log from which a restarted server resumes it;
- :mod:`mcp_client.http`: many episodes over streamable HTTP, one bearer token each;
  :mod:`mcp_client.operator` its operator API; :mod:`mcp_client.limits` what keeps it up;
- :mod:`mcp_client.client`: a small client (in memory, stdio or URL with a token) that
  reads tool results as ``(is_error, text)``;
- :mod:`mcp_client.agent`: the baseline LLM runner (any OpenAI-compatible endpoint), with
  :mod:`mcp_client.sweep` playing it over many cells and :mod:`mcp_client.agent_command` its
  ``storebench agent`` command;
- :mod:`mcp_client.cli`: the installed ``storebench`` command (the core's subcommands plus
  ``mcp`` and ``agent``); the MCP latency benchmark lives in :mod:`benchmarks.mcp`;
  :mod:`mcp_client.openenv_env`: the OpenEnv adapter.

Nothing here declares a tool.
"""
