/**
 * The console with an agent beside it, as a person has them: one home shared by a real MCP
 * server (in process, paying the sandbox `t`) and the console, opened on the home's journal
 * the way `paid-actions-mcp console` opens it (openJournal, consoleAudit), with a person
 * signed in through a login link. close() stops the console, the agent and the journal, in
 * that order, and removes the home; the sandbox is the caller's.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openJournal } from "../../src/app/index.js";
import { consoleAudit } from "../../src/commands/console.js";
import { startConsole, type ConsoleHandle } from "../../src/console/server.js";
import { loginAsPerson, type ConsolePerson } from "./console-person.js";
import { serviceEnv } from "./engine.js";
import { startInProcess, type InProcServer } from "./inproc.js";
import type { TestSandbox } from "./sandbox.js";

export type HomeJournal = Awaited<ReturnType<typeof openJournal>>;

export interface ConsoleWithAgent {
  home: string;
  env: Record<string, string>;
  agent: InProcServer;
  j: HomeJournal;
  handle: ConsoleHandle;
  person: ConsolePerson;
  close(): Promise<void>;
}

/** `extraEnv` is added to the environment that points the agent at `t` (e.g. a lower approval threshold). */
export async function startConsoleWithAgent(
  t: TestSandbox,
  extraEnv: Record<string, string> = {},
): Promise<ConsoleWithAgent> {
  const home = mkdtempSync(join(tmpdir(), "pam-console-"));
  const env = { ...serviceEnv(t, home), ...extraEnv };
  let agent: InProcServer | undefined;
  let j: HomeJournal | undefined;
  let handle: ConsoleHandle | undefined;
  const close = async () => {
    await handle?.close();
    await agent?.close();
    await j?.close();
    rmSync(home, { recursive: true, force: true });
  };
  try {
    agent = await startInProcess({ env, era: "legacy" });
    j = await openJournal(env);
    if (!j.configResult.ok) throw new Error("the test's configuration is invalid");
    handle = await startConsole({
      engine: j.engine,
      journal: j.journal,
      transcripts: j.transcripts,
      home,
      config: j.configResult.config,
      audit: consoleAudit(env),
    });
    const person = await loginAsPerson(handle.loginUrl("/"));
    return { home, env, agent, j, handle, person, close };
  } catch (e) {
    await close();
    throw e;
  }
}
