/**
 * The console's receipt routes: a purchase's receipt as `paid-actions-mcp receipt` writes it
 * (made now, signed by the key that paid), for download; and the same receipt beside its
 * checks (`receipt verify` without an RPC: every signature, the transaction it carries, the
 * approval's passkey, the seller's word), for the readable page. Reads only: a receipt holds
 * no secret, and making one moves no money.
 */
import type { ServerResponse } from "node:http";
import { verifyReceipt, type ReceiptDocument } from "../engine/index.js";
import type { ApiContext, Handler } from "./api.js";
import { ApiError, sendJson } from "./respond.js";

const ID = "([A-Za-z0-9_-]{1,100})";

/** The receipt of the purchase or execution `id`, or the refusal as the API answers it. */
async function made(c: ApiContext, id: string): Promise<ReceiptDocument> {
  const r = await (c.d.receipt ? c.d.receipt(id) : c.d.engine.receipt(id));
  if (r.ok) return r.receipt;
  if (r.problem === "not_found") throw new ApiError(404, "not_found", r.message);
  // Nothing ever signed (no money moved), or only another key can sign it: there is no receipt to give.
  throw new ApiError(409, `receipt_${r.problem}`, r.message);
}

/** The document as `receipt --out` writes it, offered as a file. */
function sendReceipt(res: ServerResponse, doc: ReceiptDocument): void {
  const body = `${JSON.stringify(doc, null, 2)}\n`;
  res.writeHead(200, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "Content-Disposition": `attachment; filename="receipt-${doc.id}.json"`,
  });
  res.end(body);
}

export const RECEIPT_GET: Array<[RegExp, Handler]> = [
  [new RegExp(`^/api/receipts/${ID}$`), async (c, m, _req, res) => sendReceipt(res, await made(c, m[1]!))],
  [
    new RegExp(`^/api/receipts/${ID}/checked$`),
    async (c, m, _req, res) => {
      const receipt = await made(c, m[1]!);
      sendJson(res, 200, { receipt, verdict: await verifyReceipt(receipt) });
    },
  ],
];
