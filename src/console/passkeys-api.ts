/**
 * The console's passkey routes: the passkeys registered (public keys only: nothing here is a
 * secret), the challenge an approval's passkey signs (the digest of its terms, from the
 * engine), the ceremony of the terminal command that started this console (`passkey add` /
 * `passkey remove`: only that console has one), and the hop to the console's localhost name —
 * WebAuthn refuses an IP address as its relying party, so a page opened on 127.0.0.1 is
 * handed a fresh one-time link to the same page on localhost.
 */
import type { IncomingMessage } from "node:http";
import { approvalChallenge, registeredPasskeys, type AssertionParts } from "../engine/index.js";
import type { ApiContext, Handler } from "./api.js";
import { ApiError, readJsonBody, sendJson } from "./respond.js";
import { safeNext } from "./security.js";

const ID = "([A-Za-z0-9_-]{1,100})";

/** The origin a request was made on: the Host the guard has already checked. */
export const originOf = (req: IncomingMessage) => `http://${req.headers.host ?? ""}`;

/** A base64url part of an authenticator's response, or undefined. */
const part = (v: unknown) => (typeof v === "string" && /^[A-Za-z0-9_-]{1,16384}$/.test(v) ? v : undefined);

/** An assertion as the page sends it: four base64url parts; an ApiError for anything else. */
export function assertionOf(v: unknown): AssertionParts {
  const a = (typeof v === "object" && v !== null ? v : {}) as Record<string, unknown>;
  const parts = {
    credentialId: part(a.credentialId),
    authenticatorData: part(a.authenticatorData),
    clientDataJSON: part(a.clientDataJSON),
    signature: part(a.signature),
  };
  if (!parts.credentialId || !parts.authenticatorData || !parts.clientDataJSON || !parts.signature)
    throw new ApiError(
      400,
      "invalid_input",
      "a passkey assertion is credentialId, authenticatorData, clientDataJSON and signature, each base64url",
    );
  return parts as AssertionParts;
}

async function passkeyList(c: ApiContext) {
  const all = await c.d.journal.passkeys();
  return all.map((p) => ({
    credentialId: p.credentialId,
    label: p.label,
    algorithm: p.algorithm,
    createdAt: new Date(p.createdAt).toISOString(),
    removedAt: p.removedAt === null ? null : new Date(p.removedAt).toISOString(),
    owner: p.ownerSignature ? p.owner : null,
    signCount: p.signCount,
  }));
}

export const PASSKEY_GET: Array<[RegExp, Handler]> = [
  [
    /^\/api\/passkeys$/,
    async (c, _m, _req, res) =>
      sendJson(res, 200, { items: await passkeyList(c), ceremony: c.d.passkeyDesk?.ceremony() ?? null }),
  ],
  [
    new RegExp(`^/api/approvals/${ID}/challenge$`),
    async (c, m, _req, res) => {
      const challenge = await approvalChallenge(c.d.journal, m[1]!);
      if (!challenge)
        throw new ApiError(
          404,
          "not_found",
          `no passkey challenge for approval ${m[1]} (no such approval, or no passkey registered)`,
        );
      sendJson(res, 200, { challenge });
    },
  ],
];

export const PASSKEY_POST: Array<[RegExp, Handler]> = [
  [
    /^\/api\/passkeys\/ceremony$/,
    async (c, _m, req, res) => {
      const desk = c.d.passkeyDesk;
      if (!desk?.ceremony())
        throw new ApiError(
          404,
          "not_found",
          "no passkey ceremony is waiting here: run `paid-actions-mcp passkey add` (or remove) at a terminal",
        );
      const message = await desk.answer(await readJsonBody(req, 128 * 1024), originOf(req));
      sendJson(res, 200, { message });
    },
  ],
  [
    /^\/api\/session\/localhost$/,
    async (c, _m, req, res) => {
      const body = await readJsonBody(req);
      if (!c.login) throw new ApiError(503, "unavailable", "this console cannot sign a browser in again");
      const next = safeNext(typeof body.next === "string" ? body.next : "/");
      const url = new URL(c.login(next).url);
      url.hostname = "localhost";
      sendJson(res, 200, { url: url.href });
    },
  ],
];

/** How many passkeys are registered (the page asks for one to approve when any is). */
export async function passkeyCount(c: ApiContext): Promise<number> {
  return (await registeredPasskeys(c.d.journal)).length;
}
