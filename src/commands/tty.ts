/**
 * Asking a person at an interactive terminal: whether there is one, reading one line with
 * or without echo, and the approval PIN. Approvals, the PIN and lifting a freeze are only
 * taken here, from a terminal a person types at: an agent's tool call (or a shell it drives
 * through pipes) has no TTY.
 */
import { pinGate, verifyPin, type PinGate } from "../engine/index.js";

/** The streams a prompt uses; the real ones by default. */
export interface Terminal {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
}

const real = (): Terminal => ({ input: process.stdin, output: process.stdout });

/** Whether a person can be asked: stdin and stdout are both terminals. */
export function interactive(t: Terminal = real()): boolean {
  return t.input.isTTY === true && t.output.isTTY === true;
}

/** The one line said when a command needs a person and has no terminal (and where else it can be done). */
export const NO_TTY = (what: string, orConsole = true) =>
  `${what} needs a person at an interactive terminal${orConsole ? ", or in the paid-actions console" : ""}`;

/**
 * Reads one line from the terminal in raw mode, echoing it unless `hidden`. Resolves with
 * the line, or undefined on Ctrl-C, Ctrl-D at an empty line, or the end of input. Restores
 * the terminal's mode and releases stdin when done.
 */
export function readLine(
  prompt: string,
  o: { hidden?: boolean; terminal?: Terminal } = {},
): Promise<string | undefined> {
  const { input, output } = o.terminal ?? real();
  return new Promise((resolve) => {
    let line = "";
    const wasRaw = input.isRaw;
    const finish = (value: string | undefined, rest = "") => {
      input.off("data", onData);
      input.off("end", onEnd);
      if (input.isTTY) input.setRawMode(wasRaw);
      input.pause();
      if (rest) input.unshift(rest, "utf8");
      output.write("\n");
      resolve(value);
    };
    const onEnd = () => finish(undefined);
    const onData = (chunk: string) => {
      // An escape sequence (arrow keys and the like) is not part of an answer.
      if (chunk.startsWith("\u001b")) return;
      const chars = [...chunk];
      for (let i = 0; i < chars.length; i++) {
        const ch = chars[i]!;
        if (ch === "\r" || ch === "\n") {
          // Typed ahead (a paste of several lines): the rest is for the next question.
          const rest = chars.slice(ch === "\r" && chars[i + 1] === "\n" ? i + 2 : i + 1).join("");
          return finish(line, rest);
        }
        if (ch === "\u0003") return finish(undefined); // Ctrl-C
        if (ch === "\u0004") {
          if (line.length === 0) return finish(undefined); // Ctrl-D
          continue;
        }
        if (ch === "\u007f" || ch === "\b") {
          if (line.length > 0) {
            line = [...line].slice(0, -1).join("");
            if (!o.hidden) output.write("\b \b");
          }
          continue;
        }
        if (ch === "\u0015") {
          // Ctrl-U: start the line again.
          if (!o.hidden) output.write("\b \b".repeat([...line].length));
          line = "";
          continue;
        }
        if (ch < " ") continue;
        line += ch;
        if (!o.hidden) output.write(ch);
      }
    };
    // Raw (no echo by the terminal) before the prompt: nothing typed at it is echoed by the terminal.
    if (input.isTTY) input.setRawMode(true);
    output.write(prompt);
    input.setEncoding("utf8");
    input.on("data", onData);
    input.on("end", onEnd);
    input.resume();
  });
}

/** A pause after a wrong PIN, so that guessing is slow. */
export const wrongPinDelay = (ms = 1_000) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Asks for the approval PIN when one is set (without echo) before a person's decision takes
 * effect: true when none is set (and the journal remembers none: `recorded`) or the right one
 * was typed. A damaged PIN file, one gone while the journal remembers a PIN (fail closed), no
 * answer or a wrong PIN (after a second's wait) is said on stderr, ending with `nothing`
 * (what did not happen), and decides nothing.
 */
export async function askPin(
  home: string,
  recorded: Parameters<typeof pinGate>[1],
  nothing: string,
  err: (line: string) => void,
): Promise<boolean> {
  const gate = pinGate(home, recorded);
  if (gate.kind === "none") return true;
  if (gate.kind === "refuse") {
    err(`${gate.problem}; ${nothing}. ${PIN_REMEDY[gate.cause]}`);
    return false;
  }
  const pin = await readLine("Approval PIN: ", { hidden: true });
  if (pin === undefined) {
    err(`no PIN given; ${nothing}`);
    return false;
  }
  if (!(await verifyPin(home, pin, { required: true }))) {
    await wrongPinDelay();
    err(`wrong PIN; ${nothing}`);
    return false;
  }
  return true;
}

/** What a person does when the PIN cannot be checked (said at a terminal only). */
const PIN_REMEDY = {
  damaged: "Remove the file and set the PIN again with `paid-actions-mcp set-pin`",
  missing: "A person sets the PIN again with `paid-actions-mcp set-pin` at a terminal",
} as const satisfies Record<Extract<PinGate, { kind: "refuse" }>["cause"], string>;
