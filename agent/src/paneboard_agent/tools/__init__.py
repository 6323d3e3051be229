"""The in-pane tools: `paneboard run` (`relay`), `paneboard emit`, `paneboard ask`, and
`report.report()` for Python programs.

They run inside a pane, apart from the collector, and import nothing of it: what they
share with it is the wire format (`paneboard_protocol`, including the stored pane state
`paneboard_protocol.pane_state` they write and the collector reads). Each tool is
started from its own module (the `paneboard` command's table names
`paneboard_agent.tools.relay`, `.emit`, `.ask`; a program imports
`paneboard_agent.tools.report`), so a tool loads only what it needs: this entry point
re-exports nothing, since a name here would load every tool for each.
"""

__all__: list[str] = []
