/**
 * paneboard reports from Pi (pi-coding-agent): copy to ~/.pi/agent/extensions/paneboard.ts.
 *
 * Pi has no hooks file; an extension listens to its events. Each report runs
 * `paneboard emit` (on PATH), one after the other, so a quick turn's `done` never
 * lands before its `working`. The answer goes to emit as hook JSON on stdin, which
 * makes it one line and cuts it to the protocol's bound.
 */

import { spawn } from "node:child_process";
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

let queue: Promise<void> = Promise.resolve();

function emit(args: string[], hookJson?: object): void {
	const argv = ["emit", ...args, "--protocol", "both", "--agent", "pi"];
	if (args[0] !== "clear") argv.push("--app", "pi"); // clear takes only an id: emit refuses --app
	if (hookJson !== undefined) argv.push("--hook-json", "-");
	queue = queue.then(
		() =>
			new Promise<void>((resolve) => {
				const child = spawn("paneboard", argv, { stdio: ["pipe", "ignore", "ignore"] });
				child.on("error", () => resolve()); // paneboard not installed: Pi goes on
				child.on("close", () => resolve());
				child.stdin.on("error", () => {});
				child.stdin.end(hookJson === undefined ? "" : JSON.stringify(hookJson));
			}),
	);
}

/** The text of the last assistant message of a prompt's messages. */
function answer(messages: readonly unknown[]): string {
	for (let i = messages.length - 1; i >= 0; i--) {
		const m = messages[i] as { role?: string; content?: unknown };
		if (m?.role !== "assistant" || !Array.isArray(m.content)) continue;
		const text = m.content
			.filter((c: { type?: string }) => c?.type === "text")
			.map((c: { text?: string }) => c.text ?? "")
			.join(" ")
			.trim();
		if (text) return text;
	}
	return "";
}

export default function (pi: ExtensionAPI) {
	pi.on("session_start", async () => emit(["idle"]));
	pi.on("agent_start", async () => emit(["working"]));
	pi.on("agent_end", async (event) => emit(["done"], { message: answer(event.messages) }));
	pi.on("session_shutdown", async () => {
		emit(["clear", "--ended"]);
		await queue; // the last report is written before Pi exits
	});
}
