/**
 * Following an execution to its end over real stdio: a resource subscription, the
 * resources and templates lists, wait_for_execution with progress notifications, and a
 * task-augmented paid call.
 */
import { CallToolResultSchema, ResourceUpdatedNotificationSchema, type Progress } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, cleanupAll, ensureBuilt, readJson, sc, SMALL_SERVER, startServer, text, withTimeout } from "../helpers/mcp.js";

beforeAll(() => ensureBuilt(), 90_000);
afterEach(() => cleanupAll());

const FINAL = ["completed", "failed", "refunded"];

describe("mcp e2e: following an execution", () => {
  it("resources/subscribe on the execution: notifications/resources/updated as it moves to completed; resources/read returns the record", async () => {
    const s = await startServer({ delayMs: 1_500 });
    const updates: string[] = [];
    let onUpdate: (() => void) | undefined;
    s.client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
      updates.push(n.params.uri);
      onUpdate?.();
    });

    const paid = sc(await call(s.client, "servers_provision", { ...SMALL_SERVER }));
    const uri: string = paid.resourceUri;
    expect(uri).toBe(`paid-actions://executions/${paid.executionId}`);
    expect(FINAL).not.toContain(paid.status);
    await s.client.subscribeResource({ uri });

    // Each update: read the resource, until it is completed. `mark` counts the updates seen
    // before each read, so an update that races the read is never lost.
    const deadline = Date.now() + 25_000;
    let mark = updates.length;
    let record = await readJson(s.client, uri);
    const seen = [record.status];
    while (record.status !== "completed" && Date.now() < deadline) {
      const after = mark;
      await withTimeout(
        new Promise<void>((resolve) => {
          onUpdate = () => {
            if (updates.length > after) resolve();
          };
          onUpdate();
        }),
        Math.max(1, deadline - Date.now()),
        `an update for ${uri} (seen ${seen.join(" -> ")})`,
      );
      onUpdate = undefined;
      mark = updates.length;
      record = await readJson(s.client, uri);
      seen.push(record.status);
    }
    expect(record.status).toBe("completed");
    expect(updates.filter((u) => u === uri).length).toBeGreaterThanOrEqual(1);
    expect(record.executionId).toBe(paid.executionId);
    expect(record.action).toBe("servers.provision");
    expect(record.output).toBeTruthy();
    expect(record.output.serverId).toBeTruthy();

    // The documented resources and templates.
    const { resources } = await s.client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toContain("paid-actions://executions");
    expect(uris).toContain("paid-actions://spending");
    expect(uris).toContain(uri);
    expect(uris).toContain(`paid-actions://transcripts/${paid.callId}`);
    for (const r of resources) expect(r.mimeType, r.uri).toBe("application/json");
    const { resourceTemplates } = await s.client.listResourceTemplates();
    const templates = resourceTemplates.map((t) => t.uriTemplate);
    expect(templates).toContain("paid-actions://executions/{executionId}");
    expect(templates).toContain("paid-actions://transcripts/{callId}");

    // And they read as JSON.
    const recent = await readJson(s.client, "paid-actions://executions");
    expect(recent.items.map((i: any) => i.executionId)).toContain(paid.executionId);
    const spending = await readJson(s.client, "paid-actions://spending");
    expect(Number(spending.spentTotal)).toBeCloseTo(0.288, 6);
    const transcript = await readJson(s.client, `paid-actions://transcripts/${paid.callId}`);
    expect(transcript.callId).toBe(paid.callId);
    expect(transcript.entries.length).toBeGreaterThan(0);

    await s.client.unsubscribeResource({ uri });
  });

  it("wait_for_execution sends strictly increasing progress and returns the final record; timeoutSeconds is capped at 100", async () => {
    const s = await startServer({ delayMs: 3_000 });
    const paid = sc(await call(s.client, "servers_provision", { ...SMALL_SERVER }));
    expect(FINAL).not.toContain(paid.status);

    const progress: Progress[] = [];
    const result = await s.client.callTool(
      { name: "wait_for_execution", arguments: { executionId: paid.executionId, timeoutSeconds: 30 } },
      CallToolResultSchema,
      { timeout: 40_000, onprogress: (p) => void progress.push(p) },
    );
    expect(result.isError ?? false, text(result)).toBe(false);
    const record = sc(result);
    expect(record.executionId).toBe(paid.executionId);
    expect(record.status).toBe("completed");
    expect(record.final).toBe(true);
    expect(record.output?.serverId).toBeTruthy();

    expect(progress.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);

    // 100 s is allowed (and returns at once for a final execution); 101 s is not.
    const started = Date.now();
    const atMost = await call(s.client, "wait_for_execution", { executionId: paid.executionId, timeoutSeconds: 100 });
    expect(atMost.isError ?? false, text(atMost)).toBe(false);
    expect(sc(atMost).status).toBe("completed");
    expect(Date.now() - started).toBeLessThan(5_000);
    const tooLong = await call(s.client, "wait_for_execution", { executionId: paid.executionId, timeoutSeconds: 101 });
    expect(tooLong.isError).toBe(true);
    expect(sc(tooLong).error.code).toBe("invalid_input");

    // An unknown execution is a tool error too.
    const unknown = await call(s.client, "wait_for_execution", { executionId: "exe_doesnotexist", timeoutSeconds: 1 });
    expect(unknown.isError).toBe(true);
    expect(sc(unknown).error.code).toBe("not_found");
  });

  it("a task-augmented paid call: the task completes when the execution is final, its result carries the final status; a plain call still returns at once", async () => {
    const s = await startServer({ delayMs: 3_000 });
    const { tools } = await s.client.listTools();
    expect(tools.find((t) => t.name === "servers_provision")?.execution?.taskSupport).toBe("optional");

    const started = Date.now();
    const stream = s.client.experimental.tasks.callToolStream({ name: "servers_provision", arguments: { ...SMALL_SERVER } }, CallToolResultSchema, {
      task: { ttl: 120_000 },
      timeout: 30_000,
    });
    const kinds: string[] = [];
    const statuses: string[] = [];
    let taskId: string | undefined;
    let final: any;
    await withTimeout(
      (async () => {
        for await (const message of stream) {
          kinds.push(message.type);
          if (message.type === "taskCreated") taskId = message.task.taskId;
          if (message.type === "taskStatus") statuses.push(message.task.status);
          if (message.type === "result") final = message.result;
          if (message.type === "error") throw message.error;
        }
      })(),
      40_000,
      "the task to finish",
    );
    expect(kinds[0]).toBe("taskCreated");
    expect(kinds.at(-1)).toBe("result");
    expect(taskId).toBeTruthy();
    expect(statuses.at(-1)).toBe("completed");
    expect(statuses).toContain("working");
    expect(final.isError ?? false, text(final)).toBe(false);
    const result = sc(final);
    expect(result.status).toBe("completed");
    expect(result.action).toBe("servers.provision");
    expect(result.payment.amount).toBe("0.288");
    // The provider took ~3 s: the task did not end before the execution did.
    expect(Date.now() - started).toBeGreaterThan(2_500);

    const task = await s.client.experimental.tasks.getTask(taskId!);
    expect(task.status).toBe("completed");
    const view = sc(await call(s.client, "get_execution", { executionId: result.executionId }));
    expect(view.status).toBe("completed");

    // A refusal as a task: the task fails, and tasks/result carries the tool error.
    const refused: string[] = [];
    let refusedTaskId: string | undefined;
    await withTimeout(
      (async () => {
        const over = s.client.experimental.tasks.callToolStream(
          { name: "companies_create", arguments: { jurisdiction: "US-DE", companyType: "llc", name: "Demo Robotics LLC", owners: [{ type: "individual", fullName: "Ada Lovelace", country: "GB" }] } },
          CallToolResultSchema,
          { task: { ttl: 60_000 }, timeout: 20_000 },
        );
        for await (const message of over) {
          refused.push(message.type === "taskStatus" ? message.task.status : message.type);
          if (message.type === "taskCreated") refusedTaskId = message.task.taskId;
        }
      })(),
      20_000,
      "the refused task to end",
    );
    expect(refused.at(-2)).toBe("failed");
    expect(refused.at(-1)).toBe("error");
    const refusal = await s.client.experimental.tasks.getTaskResult(refusedTaskId!, CallToolResultSchema);
    expect(refusal.isError).toBe(true);
    expect(sc(refusal).error.code).toBe("budget_exceeded");

    // The same tool without a task: the result comes at once, the execution still running.
    const plainStarted = Date.now();
    const plain = await call(s.client, "servers_provision", { ...SMALL_SERVER, durationHours: 48 });
    expect(Date.now() - plainStarted).toBeLessThan(5_000);
    expect(plain.isError ?? false, text(plain)).toBe(false);
    expect(FINAL).not.toContain(sc(plain).status);
    expect(sc(plain).executionId).not.toBe(result.executionId);
  });
});
