"""The Python reference of benchmark P3: a FastMCP server with the same `echo` tool.

    python fastmcp_echo.py stdio
    python fastmcp_echo.py http PORT     # stateless, JSON responses, at /mcp on 127.0.0.1
"""

import sys

from fastmcp import FastMCP

server = FastMCP("bench")


@server.tool
def echo(text: str) -> dict:
    """Return the text unchanged."""
    return {"text": text}


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run(transport="stdio", show_banner=False)
    else:
        server.run(
            transport="http",
            show_banner=False,
            host="127.0.0.1",
            port=int(sys.argv[2]),
            path="/mcp",
            log_level="warning",
            json_response=True,
            stateless_http=True,
        )
