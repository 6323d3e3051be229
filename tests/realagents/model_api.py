"""A stand-in for the model APIs the real agent CLIs call, on loopback, stdlib only.

Run as `python model_api.py DIR`: it binds 127.0.0.1 on a free port, writes the port to
DIR/port, logs every request body to DIR/requests.jsonl, and answers in the streaming
format of whichever API the path names:

- Anthropic Messages (`POST /v1/messages`, SSE `message_start` … `message_stop`),
- OpenAI Responses (`POST …/responses`, SSE `response.created` … `response.completed`),
- OpenAI chat completions (`POST …/chat/completions`, SSE `chat.completion.chunk`); under
  `/text-tools/v1/…` the task is answered with a ```bash block instead of a tool call, for
  agents that offer no tools (Aider),
- Gemini (`POST …:streamGenerateContent?alt=sse` and `…:generateContent`).

The canned conversation is the same for all: a request carrying the task word
(`PBTASK`) and no tool result is answered with one shell tool call (`touch pb-ran`,
which every agent asks approval for); a request carrying a tool result is answered
with text that ends the turn. Both of these "turn" answers are GATED: the server writes
DIR/held-N and waits for the test to create DIR/go-N (N = 1, 2, …) before it sends the
answer, so the agent is visibly working for exactly as long as the test needs to look.
Everything else (title, topic, quota side requests) is answered at once with short text.

DIR/commands.json, when a test writes it, is a list of shell commands asked in turn
(different prompts of the same rule, one after the other): the task is answered with
the first, each tool result with the next one, and the result of the last with the
text that ends the turn. Anthropic counts the tool results in the conversation; the
other APIs count the commands asked so far (`State.ask`), so an agent that sends no
tool result back (Aider runs the block itself) is asked the next command by its next
task message. Without the file every task asks `touch pb-ran`, as before. On the chat
completions API an entry may instead be an object `{"tool": NAME, "args": {...}}`: a
call of that offered tool with those arguments (a file write, a question to the user),
for agents whose other tools draw prompts of their own (Copilot CLI).

Why a gate instead of a delay: on a loaded two-core machine no delay is long enough
to be sure and short enough to be cheap; the test's own condition is.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TASK = "PBTASK"
COMMAND = "touch pb-ran"
FINAL = "All done: pb-ran exists."
SIDE = "Paneboard check"
GATE_TIMEOUT = 600.0


class State:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.turns = 0
        self.asked = 0  # commands asked so far (all APIs but Anthropic's)

    def log(self, path: str, body: Any) -> None:
        with self.lock, (self.root / "requests.jsonl").open("a") as f:
            f.write(json.dumps({"path": path, "body": body}) + "\n")

    def ask(self, kind: str) -> str | dict[str, Any] | None:
        """The command to ask for this turn request (`kind` from `classify`), or None:
        the turn ends. A task always asks one (the next; the last again once all were
        asked); a tool result asks the next while any is left."""
        path = self.root / "commands.json"
        listed = json.loads(path.read_text()) if path.exists() else [COMMAND]
        commands = [c if isinstance(c, dict) else str(c) for c in listed]
        with self.lock:
            if kind == "result" and self.asked >= len(commands):
                return None
            command = commands[min(self.asked, len(commands) - 1)]
            self.asked += 1
            return command

    def hold(self) -> None:
        """Block this request until the test opens gate N (N counts turn answers)."""
        with self.lock:
            self.turns += 1
            n = self.turns
        (self.root / f"held-{n}").touch()
        deadline = time.monotonic() + GATE_TIMEOUT
        while not (self.root / f"go-{n}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def _why(command: str) -> str:
    """The description a tool call gives its command."""
    return "Create pb-ran" if command == COMMAND else f"Run {command}"


def _text_of(obj: Any) -> str:
    return json.dumps(obj)


def classify(body: dict[str, Any]) -> str:
    """'result' (a tool result came back), 'task' (our prompt, tools offered) or 'side'.

    Decided from the LAST message only: an earlier turn's tool result must not make a
    new prompt look answered.
    """
    msgs = body.get("messages") or body.get("input") or body.get("contents") or []
    if isinstance(msgs, str):
        msgs = [{"role": "user", "content": msgs}]
    if not isinstance(msgs, list):
        msgs = [msgs]
    # Claude Code appends a system-role message after the user's; it is not the turn.
    while msgs and isinstance(msgs[-1], dict) and msgs[-1].get("role") in ("system", "developer"):
        msgs = msgs[:-1]
    if not msgs:
        return "side"
    if len(body.get("tools") or []) == 1 and pick_tool(body, ("respond_in_schema",)) is not None:
        # Qwen Code's auto-mode judge: a structured-output call over the transcript (the
        # task word included) about the pending tool call, not a turn of the conversation.
        return "side"
    result_markers = ('"tool_result"', '"function_call_output"', '"functionResponse"', '"role": "tool"')
    if any(m in _text_of(msgs[-1]) for m in result_markers):
        return "result"
    # The user's current turn: everything after the model last spoke.
    tail = msgs
    for i in range(len(msgs) - 1, -1, -1):
        item = msgs[i]
        if isinstance(item, dict) and (
            item.get("role") in ("assistant", "model") or item.get("type") == "function_call"
        ):
            tail = msgs[i + 1 :]
            break
    has_tools = bool(body.get("tools"))
    # Under /text-tools/ (Aider) the task is answered in text: no tools are offered there.
    if TASK in _text_of(tail) and (has_tools or body.get("_path", "").startswith("/text-tools/")):
        return "task"
    return "side"


def pick_tool(body: dict[str, Any], wanted: tuple[str, ...]) -> dict[str, Any] | None:
    """The first offered tool whose name is one of `wanted` (each API shapes tools its way)."""
    offered: list[dict[str, Any]] = []
    for t in body.get("tools") or []:
        if "functionDeclarations" in t:
            offered.extend(t["functionDeclarations"])
        elif "function" in t:
            offered.append(t["function"])
        else:
            offered.append(t)
    for name in wanted:
        for t in offered:
            if t.get("name") == name:
                return t
    return None


class Handler(BaseHTTPRequestHandler):
    server_version = "pb-model-api/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the log file has it all
        pass

    @property
    def state(self) -> State:
        return self.server.state  # type: ignore[attr-defined]

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        return body if isinstance(body, dict) else {"_raw": body}

    def do_GET(self) -> None:
        self.state.log(self.path, None)
        if self.path.rstrip("/").endswith("/models"):
            self._json({"object": "list", "data": [{"id": "pb-model", "object": "model"}], "models": []})
        else:
            self._json({})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._body()
        body["_path"] = self.path
        self.state.log(self.path, body)
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._json({"input_tokens": 10})
        elif path.endswith("/messages"):
            self._anthropic(body)
        elif path.endswith("/responses"):
            self._responses(body)
        elif path.endswith("/chat/completions"):
            self._chat(body)
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._gemini(body, stream=":streamGenerateContent" in path)
        elif ":countTokens" in path:
            self._json({"totalTokens": 10})
        else:
            self._json({})

    # -- plumbing -------------------------------------------------------------------

    def _json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse_start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _event(self, data: Any, event: str | None = None) -> None:
        out = f"event: {event}\n" if event else ""
        out += f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
        self.wfile.write(out.encode())
        self.wfile.flush()

    # -- Anthropic Messages ---------------------------------------------------------

    def _commands(self) -> list[str]:
        path = self.state.root / "commands.json"
        return [str(c) for c in json.loads(path.read_text())] if path.exists() else [COMMAND]

    def _anthropic(self, body: dict[str, Any]) -> None:
        kind = classify(body)
        commands = self._commands()
        asked = _text_of(body.get("messages")).count('"tool_result"') if kind == "result" else 0
        wants_tool = kind == "task" or (kind == "result" and asked < len(commands))
        tool = pick_tool(body, ("Bash",)) if wants_tool else None
        command = commands[asked] if tool is not None else COMMAND
        if kind != "side":
            self.state.hold()
        if not body.get("stream"):
            content = [{"type": "text", "text": SIDE if kind == "side" else FINAL}]
            self._json(
                {
                    "id": "msg_pb",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model"),
                    "content": content,
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                }
            )
            return
        self._sse_start()
        msg = {
            "id": f"msg_pb{self.state.turns}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "pb-model"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        self._event({"type": "message_start", "message": msg}, "message_start")
        if tool is not None:
            block = {"type": "tool_use", "id": f"toolu_pb{asked + 1}", "name": tool["name"], "input": {}}
            what = _why(command)
            delta = {
                "type": "input_json_delta",
                "partial_json": json.dumps({"command": command, "description": what}),
            }
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": SIDE if kind == "side" else FINAL}
            stop = "end_turn"
        self._event(
            {"type": "content_block_start", "index": 0, "content_block": block}, "content_block_start"
        )
        self._event({"type": "content_block_delta", "index": 0, "delta": delta}, "content_block_delta")
        self._event({"type": "content_block_stop", "index": 0}, "content_block_stop")
        self._event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
        self._event({"type": "message_stop"}, "message_stop")

    # -- OpenAI Responses -----------------------------------------------------------

    def _responses(self, body: dict[str, Any]) -> None:
        kind = classify(body)
        command = self.state.ask(kind) if kind != "side" else None
        tool = (
            pick_tool(body, ("shell", "exec_command", "local_shell", "shell_command"))
            if command is not None
            else None
        )
        if kind != "side":
            self.state.hold()
        self._sse_start()
        rid = f"resp_pb{self.state.turns}_{time.monotonic_ns()}"
        base = {
            "id": rid,
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model"),
            "status": "in_progress",
            "output": [],
        }
        self._event({"type": "response.created", "response": base}, "response.created")
        if tool is not None and command is not None:
            name = tool["name"]
            if name == "exec_command":
                # Escalation is what makes Codex ask (its sandbox would let a plain `touch` fail
                # silently under read-only, without a prompt).
                args = {
                    "cmd": command,
                    "sandbox_permissions": "require_escalated",
                    "justification": _why(command) + "?",
                }
            elif name == "shell_command":
                args = {"command": command}
            else:
                args = {"command": ["bash", "-lc", command]}
            n = self.state.asked
            item = {
                "type": "function_call",
                "id": f"fc_pb{n}",
                "call_id": f"call_pb{n}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        else:
            text = SIDE if kind == "side" else FINAL
            item = {
                "type": "message",
                "id": f"msg_{rid}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            self._event(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "content": [], "status": "in_progress"},
                },
                "response.output_item.added",
            )
            self._event(
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                },
                "response.output_text.delta",
            )
        self._event(
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            "response.output_item.done",
        )
        done = {
            **base,
            "status": "completed",
            "output": [item],
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15,
            },
        }
        self._event({"type": "response.completed", "response": done}, "response.completed")

    # -- OpenAI chat completions ----------------------------------------------------

    def _chat(self, body: dict[str, Any]) -> None:
        kind = classify(body)
        command = self.state.ask(kind) if kind != "side" else None
        if isinstance(command, dict):  # a named tool's call, not a shell command
            tool = pick_tool(body, (str(command.get("tool")),))
            args = command.get("args") or {}
        else:
            tool = pick_tool(body, ("bash", "shell", "run_shell_command")) if command is not None else None
            args = {"command": command, "description": _why(command or "")}
        if kind != "side":
            self.state.hold()
        if kind == "task" and isinstance(command, str) and tool is None:
            # No tools offered (Aider): the "tool call" is a shell block it offers to run.
            text = f"Run this:\n\n```bash\n{command}\n```\n"
        else:
            text = SIDE if kind == "side" else FINAL
        cid = f"chatcmpl-pb{self.state.turns}"
        head = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "pb-model"),
        }
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text}
            self._json(
                {
                    **head,
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            )
            return
        self._sse_start()
        if tool is not None and command is not None:
            call = {
                "index": 0,
                "id": f"call_pb{self.state.asked}",
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "arguments": json.dumps(args),
                },
            }
            self._event(
                {
                    **head,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "tool_calls": [call]},
                            "finish_reason": None,
                        }
                    ],
                }
            )
            finish = "tool_calls"
        else:
            self._event(
                {
                    **head,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}
                    ],
                }
            )
            finish = "stop"
        self._event(
            {
                **head,
                "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
        self._event("[DONE]")

    # -- Gemini ---------------------------------------------------------------------

    def _gemini(self, body: dict[str, Any], stream: bool) -> None:
        kind = classify(body)
        command = self.state.ask(kind) if kind != "side" else None
        tool = pick_tool(body, ("run_shell_command",)) if command is not None else None
        if kind != "side":
            self.state.hold()
        if tool is not None and command is not None:
            parts: list[dict[str, Any]] = [
                {
                    "functionCall": {
                        "name": tool["name"],
                        "args": {"command": command, "description": _why(command)},
                    }
                }
            ]
        else:
            parts = [{"text": SIDE if kind == "side" else FINAL}]
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "pb-model",
        }
        if not stream:
            self._json(chunk)
            return
        self._sse_start()
        self._event(chunk)


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    root.mkdir(parents=True, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(root)  # type: ignore[attr-defined]
    tmp = root / "port.tmp"
    tmp.write_text(str(server.server_address[1]))
    tmp.rename(root / "port")
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
