"""MCP server adapter and client; filled by a later issue."""
