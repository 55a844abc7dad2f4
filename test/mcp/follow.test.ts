/**
 * Following an execution to its end over real stdio: a resource subscription, the
 * resources and templates lists, wait_for_execution with progress notifications; and no
 * task support advertised (long purchases are followed by their execution id instead).
 */
import {
  CallToolResultSchema,
  ResourceUpdatedNotificationSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  cleanupAll,
  ensureBuilt,
  readJson,
  sc,
  SMALL_SERVER,
  startServer,
  text,
  withTimeout,
} from "../helpers/mcp.js";

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

  it("advertises no task support: the v1 client sees no tasks capability and no tool that takes a task", async () => {
    const s = await startServer();
    expect(s.client.getServerCapabilities()?.tasks).toBeUndefined();
    const { tools } = await s.client.listTools();
    for (const tool of tools) expect(tool.execution?.taskSupport, tool.name).toBeUndefined();
  });
});
