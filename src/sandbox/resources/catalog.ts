/**
 * The sandbox's own paid x402 resources: what each one costs, what it answers, and how it
 * describes itself to the Bazaar (its discovery extension: input hints, schema, an example).
 * Their answers are pure functions of the input, so a repeated request gets the same body.
 * `GET /x402/weather?city=…` (0.001 USDC) and `POST /x402/summarize {text}` (0.01 USDC).
 */
import { createHash } from "node:crypto";
import type { HttpDiscoveryConfig } from "./bazaar.js";
import { parseDecimal } from "../../domain/money.js";
import { invalidRequest } from "../http/errors.js";

export interface PaidResource {
  method: "GET" | "POST";
  path: string;
  /** Atomic USDC units. */
  price: bigint;
  description: string;
  /** What its Bazaar discovery extension declares (`declareDiscoveryExtension(discovery)`, bazaar.ts). */
  discovery: HttpDiscoveryConfig;
  /** Checks the request's input (throws 400 invalid_request), before any payment is asked for. */
  parse(query: URLSearchParams, body: unknown): unknown;
  /** The answer for a checked input. */
  run(input: unknown): unknown;
}

const CONDITIONS = ["clear", "partly cloudy", "overcast", "light rain", "showers", "fog", "windy", "snow"] as const;
const CITY = /^[\p{L}\p{M}][\p{L}\p{M} .'-]{0,79}$/u;

/** A plausible weather report that depends only on the city's name. */
export function weatherFor(city: string) {
  const name = city.trim().replace(/\s+/g, " ");
  const h = createHash("sha256").update(name.toLowerCase()).digest();
  return {
    city: name,
    conditions: CONDITIONS[h[0]! % CONDITIONS.length]!,
    temperatureC: (h[1]! % 45) - 10,
    humidityPercent: 20 + (h[2]! % 76),
    windKph: h[3]! % 60,
    source: "paid-actions sandbox (simulated)",
  };
}

const SUMMARY_MAX = 200;
export const TEXT_MAX = 20_000;

/** The first sentence (at most 200 characters) and the number of words: deterministic. */
export function summarize(text: string) {
  const flat = text.trim().replace(/\s+/g, " ");
  const first = /^.*?[.!?](?=\s|$)/u.exec(flat)?.[0] ?? flat;
  const summary = first.length > SUMMARY_MAX ? `${first.slice(0, SUMMARY_MAX - 1).trimEnd()}…` : first;
  return { summary, wordCount: flat === "" ? 0 : flat.split(" ").length };
}

const weather: PaidResource = {
  method: "GET",
  path: "/x402/weather",
  price: parseDecimal("0.001")!,
  description: "Current weather for a city (simulated, deterministic)",
  discovery: {
    input: { city: "Lisbon" },
    inputSchema: {
      properties: { city: { type: "string", description: "The city's name", minLength: 1, maxLength: 80 } },
      required: ["city"],
    },
    output: { example: weatherFor("Lisbon") },
  },
  parse(query) {
    const city = query.get("city");
    if (city === null || !CITY.test(city.trim())) {
      throw invalidRequest("city must be a city's name (letters, spaces, . ' -), 1-80 characters", [
        { path: "city", message: city === null ? "required" : "not a city name" },
      ]);
    }
    return city;
  },
  run: (city) => weatherFor(city as string),
};

const summarizer: PaidResource = {
  method: "POST",
  path: "/x402/summarize",
  price: parseDecimal("0.01")!,
  description: "Summarize a text: its first sentence and its word count (deterministic)",
  discovery: {
    bodyType: "json",
    input: { text: "The sandbox settles x402 payments on its own ledger. It also sells a few things." },
    inputSchema: {
      properties: { text: { type: "string", minLength: 1, maxLength: TEXT_MAX } },
      required: ["text"],
    },
    output: { example: summarize("The sandbox settles x402 payments on its own ledger. It also sells a few things.") },
  },
  parse(_query, body) {
    const text = (body as { text?: unknown } | undefined)?.text;
    if (typeof text !== "string" || text.trim() === "" || text.length > TEXT_MAX) {
      throw invalidRequest(`the body must be {"text": "…"}, 1-${TEXT_MAX} characters`, [
        { path: "text", message: typeof text === "string" ? "empty or too long" : "required, a string" },
      ]);
    }
    return text;
  },
  run: (text) => summarize(text as string),
};

/** Every paid resource the sandbox serves. */
export const PAID_RESOURCES: readonly PaidResource[] = [weather, summarizer];
