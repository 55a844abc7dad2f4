/**
 * Resources: the recent executions, the recent paid_fetch purchases, spending and limits,
 * each execution, each purchase (and its body), each purchase's receipt, each tool call's
 * transcript; templates for
 * those; subscriptions to executions, purchases and spending on 2025 connections (2026
 * clients ask for the same updates through subscriptions/listen, which the SDK's stdio entry
 * serves; the notifications themselves come from updates.ts).
 */
import { ProtocolError, ProtocolErrorCode, ResourceNotFoundError, type Server } from "@modelcontextprotocol/server";
import type { McpContext } from "./context.js";
import { purchaseView, recentCalls, shapeBody } from "../engine/index.js";
import { executionUri, purchaseUri, transcriptUri } from "./uris.js";

/** What a 2025 client may subscribe to: the lists, one execution or purchase, the spending (updates.ts sends them). */
const SUBSCRIBABLE = /^paid-actions:\/\/((executions|purchases)(\/[A-Za-z0-9_-]{1,128})?|spending)$/;

const json = (uri: string, value: unknown) => ({
  contents: [{ uri, mimeType: "application/json", text: JSON.stringify(value, null, 2) }],
});

export const RESOURCE_TEMPLATES = [
  {
    uriTemplate: "paid-actions://executions/{executionId}",
    name: "execution",
    title: "An execution",
    mimeType: "application/json",
    description: "Status, output and refund of one execution; subscribe for updates.",
  },
  {
    uriTemplate: "paid-actions://purchases/{intentId}",
    name: "purchase",
    title: "An x402 resource bought with paid_fetch",
    mimeType: "application/json",
    description:
      "Origin, method, URL (query values redacted), price, payee, transaction and the answer's status; subscribe for updates (its settlement verified on chain).",
  },
  {
    uriTemplate: "paid-actions://purchases/{intentId}/body",
    name: "purchase-body",
    title: "The whole body a paid_fetch purchase got",
    description: "The answer's body as the resource sent it (text, or base64 for binary).",
  },
  {
    uriTemplate: "paid-actions://receipts/{id}",
    name: "receipt",
    title: "A purchase's receipt",
    mimeType: "application/json",
    description:
      "One purchase's receipt (id: an executionId or a purchase's intentId): what was bought, the requirement, the approval, the payment, the chain facts read now, the outcome and the seller's signed word, signed by the key that paid. Check it anywhere with `paid-actions-mcp receipt verify`.",
  },
  {
    uriTemplate: "paid-actions://transcripts/{callId}",
    name: "transcript",
    title: "A tool call's transcript",
    mimeType: "application/json",
    description: "The redacted record of each step of one tool call.",
  },
];

/** Registers the resource handlers on one connection's server; `subscriptions` holds its subscribed URIs. */
export function registerResources(server: Server, ctx: McpContext, subscriptions: Set<string>): void {
  server.setRequestHandler("resources/list", async () => {
    const { engine, journal, transcripts } = await ctx.runtime();
    const recent = await engine.listExecutions({ limit: 50 });
    const purchases = await engine.listPurchases({ limit: 50 });
    const calls = await recentCalls(journal, transcripts, 20);
    return {
      resources: [
        {
          uri: "paid-actions://executions",
          name: "executions",
          title: "Recent executions",
          mimeType: "application/json",
          description: "The 50 most recent executions this server paid for.",
        },
        {
          uri: "paid-actions://purchases",
          name: "purchases",
          title: "Recent x402 purchases",
          mimeType: "application/json",
          description:
            "The 50 most recent x402 resources bought with paid_fetch: origin, method, URL (query values redacted), price, payee, status, transaction.",
        },
        {
          uri: "paid-actions://spending",
          name: "spending",
          title: "Spending and limits",
          mimeType: "application/json",
        },
        ...recent.items
          .filter((i) => i.executionId)
          .map((i) => ({
            uri: executionUri(i.executionId!),
            name: i.executionId!,
            title: `${i.action} — ${i.status}`,
            mimeType: "application/json",
          })),
        ...purchases.items.map((p) => ({
          uri: purchaseUri(p.intentId),
          name: p.intentId,
          title: `${p.method ?? "?"} ${p.url ?? p.origin ?? "?"} — ${p.state}`,
          mimeType: "application/json",
        })),
        ...calls.map((t) => ({
          uri: transcriptUri(t.callId),
          name: t.callId,
          title: `Transcript ${t.callId}${t.path ? "" : ` (kept on ${t.host})`}`,
          mimeType: "application/json",
        })),
      ],
    };
  });

  server.setRequestHandler("resources/templates/list", async () => ({ resourceTemplates: RESOURCE_TEMPLATES }));

  server.setRequestHandler("resources/read", async (request) => readResource(ctx, request.params.uri));

  server.setRequestHandler("resources/subscribe", async (request) => {
    if (!SUBSCRIBABLE.test(request.params.uri))
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `cannot subscribe to ${request.params.uri.slice(0, 200)}`,
      );
    subscriptions.add(request.params.uri);
    void ctx.runtime().catch(() => undefined); // updates flow once the engine runs
    return {};
  });
  server.setRequestHandler("resources/unsubscribe", async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });
}

/** A body as a resource: text as text (whole), anything else as a base64 blob. */
function bodyContents(uri: string, contentType: string | null, body: Uint8Array) {
  const mimeType = contentType ?? "application/octet-stream";
  const kind = shapeBody(contentType ?? undefined, body.subarray(0, 1)).kind;
  if (kind === "json" || kind === "text")
    return { contents: [{ uri, mimeType, text: Buffer.from(body).toString("utf8") }] };
  return { contents: [{ uri, mimeType, blob: Buffer.from(body).toString("base64") }] };
}

/** One resource, read: the lists (executions, purchases), spending, an execution, a purchase and its body, a transcript. */
async function readResource(ctx: McpContext, uri: string) {
  const { sandbox } = ctx;
  const { engine, transcripts } = await ctx.runtime();
  if (uri === "paid-actions://executions")
    return json(uri, { ...(await engine.listExecutions({ limit: 50 })), ...(sandbox ? { sandbox: true } : {}) });
  if (uri === "paid-actions://purchases")
    return json(uri, { ...(await engine.listPurchases({ limit: 50 })), ...(sandbox ? { sandbox: true } : {}) });
  if (uri === "paid-actions://spending")
    return json(uri, { ...(await engine.spending()), ...(sandbox ? { sandbox: true } : {}) });
  let m = /^paid-actions:\/\/executions\/([A-Za-z0-9_-]{1,128})$/.exec(uri);
  if (m) {
    const view = await engine.getExecution(m[1]!, true);
    if (!view) throw new ResourceNotFoundError(uri, `no execution ${m[1]} in this server's journal`);
    return json(uri, { ...view, ...(sandbox ? { sandbox: true } : {}) });
  }
  m = /^paid-actions:\/\/purchases\/([A-Za-z0-9_-]{1,128})(\/body)?$/.exec(uri);
  if (m) {
    const found = await engine.purchase(m[1]!);
    if (!found) throw new ResourceNotFoundError(uri, `no purchase ${m[1]} in this server's journal`);
    if (!m[2]) return json(uri, { ...purchaseView(found.intent), ...(sandbox ? { sandbox: true } : {}) });
    if (!found.body) throw new ResourceNotFoundError(uri, `purchase ${m[1]} has no answer yet`);
    return bodyContents(uri, found.intent.response?.contentType ?? null, found.body);
  }
  m = /^paid-actions:\/\/receipts\/([A-Za-z0-9_-]{1,128})$/.exec(uri);
  if (m) {
    const made = await engine.receipt(m[1]!);
    // The document as signed: nothing is added to it.
    if (made.ok) return json(uri, made.receipt);
    throw new ResourceNotFoundError(uri, made.message);
  }
  m = /^paid-actions:\/\/transcripts\/(call_[A-Za-z0-9]{1,40})$/.exec(uri);
  if (m) {
    const entries = transcripts.read(m[1]!);
    if (!entries)
      throw new ResourceNotFoundError(
        uri,
        `no transcript ${m[1]} in this server's home (a server sharing the journal on another host may keep it)`,
      );
    return json(uri, { callId: m[1], path: transcripts.pathOf(m[1]!), entries });
  }
  throw new ResourceNotFoundError(uri.slice(0, 200), `unknown resource ${uri.slice(0, 200)}`);
}
