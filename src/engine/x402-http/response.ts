/**
 * A fetched response as an agent reads it back: a JSON body parsed, text cut at 64 KiB on a
 * character boundary, anything else named by its type only (the bytes go to a resource);
 * and the few response headers worth showing. Pure.
 */

/** The most text an answer carries inline; the whole body is kept as a resource. */
export const TEXT_LIMIT = 64 * 1024;
/** The largest JSON body parsed; a larger one is shown as text. */
export const JSON_LIMIT = 1024 * 1024;

export type ShapedBody =
  | { kind: "json"; value: unknown }
  | { kind: "text"; text: string; truncated: boolean }
  | { kind: "binary"; contentType: string }
  | { kind: "empty" };

/** The response headers an agent is shown; the rest (cookies, servers' internals) stay out. */
const KEPT_HEADERS: ReadonlySet<string> = new Set([
  "content-type",
  "content-length",
  "content-language",
  "cache-control",
  "etag",
  "last-modified",
  "expires",
  "retry-after",
  "location",
  "link",
  "x-request-id",
]);

/** The media type alone, lower-cased: `Application/JSON; charset=utf-8` is `application/json`. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase();
}

const isJsonType = (t: string) => t === "application/json" || t === "text/json" || t.endsWith("+json");

const isTextType = (t: string) =>
  t.startsWith("text/") ||
  t === "application/xml" ||
  t.endsWith("+xml") ||
  t === "application/javascript" ||
  t === "application/x-javascript" ||
  t === "application/ecmascript" ||
  t === "application/x-www-form-urlencoded";

/** Where to cut UTF-8 bytes at most `limit` long without splitting a character. */
function cutPoint(bytes: Uint8Array, limit: number): number {
  if (bytes.length <= limit) return bytes.length;
  let cut = limit;
  // A continuation byte (10xxxxxx) belongs to the character that started before it.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return cut;
}

function asText(bytes: Uint8Array): ShapedBody {
  const cut = cutPoint(bytes, TEXT_LIMIT);
  return {
    kind: "text",
    text: new TextDecoder("utf-8").decode(bytes.subarray(0, cut)),
    truncated: cut < bytes.length,
  };
}

/**
 * A body by its content type: JSON (`application/json`, `+json`) parsed when it parses and
 * is at most 1 MiB, else shown as text; text, XML, JavaScript and form bodies as UTF-8 text
 * cut at TEXT_LIMIT bytes; everything else, a missing type included, as binary.
 */
export function shapeBody(contentType: string | undefined, bytes: Uint8Array): ShapedBody {
  if (bytes.length === 0) return { kind: "empty" };
  const type = mediaType(contentType);
  if (isJsonType(type)) {
    if (bytes.length <= JSON_LIMIT) {
      try {
        return { kind: "json", value: JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) };
      } catch {
        // Not JSON after all: shown as the text it is.
      }
    }
    return asText(bytes);
  }
  if (isTextType(type)) return asText(bytes);
  return { kind: "binary", contentType: type === "" ? "application/octet-stream" : type };
}

/** The headers an agent is shown (content type and a small allow-list), names lower-cased. */
export function keptHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (KEPT_HEADERS.has(lower)) out[lower] = value;
  }
  return out;
}
